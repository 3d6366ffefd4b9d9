#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import NIOCore
import NIOPosix
import NearbyCore
import NearbyWire

/// Opens outgoing TCP connections as framed ``TCPEndpointChannel``s.
package enum TCPConnector {
    /// The default time one connection attempt may take.
    package static let defaultAttemptTimeout: Duration = .seconds(3)

    /// Connects to the first of `hosts` that accepts a connection on `port`.
    ///
    /// Hosts are tried one after the other, in order, each for at most `timeout`. Give IP address literals (an IPv6
    /// link-local address may carry its zone, `fe80::1%eth0`); a host name would be resolved by the system resolver.
    ///
    /// - Parameters:
    ///   - hosts: The addresses to try, in order.
    ///   - port: The TCP port.
    ///   - timeout: The longest time one attempt may take.
    ///   - medium: The medium the channel reports.
    ///   - group: The NIO event loops to run on.
    ///   - logger: Where to log; `medium` and `peer` metadata are added.
    /// - Returns: The channel to the first host that accepted.
    /// - Throws: `NearbyError` with code `.invalidArgument` for an empty host list or a port outside
    ///   `1...65535`; `.endpointIoError` naming every attempt and why it failed when no host accepted;
    ///   `CancellationError` when the task was cancelled.
    package static func connect(
        hosts: [String],
        port: Int,
        timeout: Duration = defaultAttemptTimeout,
        medium: MediumKind = .wifiLAN,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "nearby.tcp")
    ) async throws -> TCPEndpointChannel {
        guard !hosts.isEmpty else {
            throw NearbyError(.invalidArgument, "no host to connect to")
        }
        guard (1...65_535).contains(port) else {
            throw NearbyError(.invalidArgument, "TCP port \(port) is outside 1...65535")
        }
        var logger = logger
        logger[metadataKey: "medium"] = "\(medium)"
        var failures: [String] = []
        for host in hosts {
            try Task.checkCancellation()
            let target = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            do {
                let channel = try await connectOnce(
                    host: host, port: port, timeout: timeout, medium: medium, group: group, logger: logger)
                if Task.isCancelled {
                    await channel.close()
                    throw CancellationError()
                }
                logger.debug("connected", metadata: ["peer": "\(channel.peerDescription)"])
                return channel
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                logger.debug("connection attempt failed", metadata: ["peer": "\(target)", "error": "\(error)"])
                failures.append("\(target) (\(describe(error, timeout: timeout)))")
            }
        }
        throw NearbyError(.endpointIoError, "could not connect to \(failures.joined(separator: ", "))")
    }

    /// One attempt: connect, then wrap the channel in the same event-loop tick, before it can read anything.
    private static func connectOnce(
        host: String,
        port: Int,
        timeout: Duration,
        medium: MediumKind,
        group: any EventLoopGroup,
        logger: Logger
    ) async throws -> TCPEndpointChannel {
        let timeAmount = TimeAmount.nanoseconds(
            timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(timeAmount)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
        // An address literal (what DNS-SD resolution and `--address` give) skips the resolver and its thread hops;
        // names, and IPv6 literals with a zone, go through it.
        let connected: EventLoopFuture<any Channel>
        if let address = try? SocketAddress(ipAddress: host, port: port) {
            connected = bootstrap.connect(to: address)
        } else {
            connected = bootstrap.connect(host: host, port: port)
        }
        return try await connected
            .flatMapThrowing { channel in
                do {
                    return try TCPEndpointChannel.wrapSynchronously(channel, medium: medium, logger: logger)
                } catch {
                    channel.close(promise: nil)
                    throw error
                }
            }
            .get()
    }

    /// A short reason for one failed attempt.
    private static func describe(_ error: any Error, timeout: Duration) -> String {
        if let channelError = error as? ChannelError, case .connectTimeout = channelError {
            return "timed out after \(timeout)"
        }
        if let connectError = error as? NIOConnectionError {
            let reasons = connectError.connectionErrors.map { reason($0.error) }
            if connectError.dnsAError != nil || connectError.dnsAAAAError != nil, reasons.isEmpty {
                return "cannot resolve the host"
            }
            if !reasons.isEmpty {
                return reasons.joined(separator: "; ")
            }
        }
        return reason(error)
    }

    /// The system's words for a socket error (`Connection refused`), or the error's own description.
    private static func reason(_ error: any Error) -> String {
        if let ioError = error as? IOError, let message = strerror(ioError.errnoCode) {
            return String(cString: message)
        }
        return "\(error)"
    }
}
