import Logging
import NIOCore
import NIOPosix
import NearbyCore
import NearbyWire

/// A listening TCP socket that hands every accepted connection over as a framed ``TCPEndpointChannel``.
///
/// ```swift
/// let listener = try await TCPListener.bind(port: 0, logger: logger) { channel in
///     Task { while let body = try await channel.readFrame() { … } }
/// }
/// print(listener.port)
/// await listener.stop()
/// ```
///
/// Host `"0.0.0.0"` (the default) listens on every IPv4 address; `"::"` listens on every IPv6 address and, unless
/// the system sets `net.ipv6.bindv6only`, on every IPv4 address too (dual stack). `SO_REUSEADDR` is set, so a fixed
/// port can be reused right after a previous listener stopped.
package final class TCPListener: Sendable {
    /// The address the listener is bound to, as given to ``bind(host:port:medium:group:logger:onAccept:)``.
    package let host: String
    /// The bound port; the one the system chose when `0` was asked for.
    package let port: Int

    private let serverChannel: any Channel
    private let logger: Logger

    private init(host: String, port: Int, serverChannel: any Channel, logger: Logger) {
        self.host = host
        self.port = port
        self.serverChannel = serverChannel
        self.logger = logger
    }

    /// Starts listening.
    ///
    /// - Parameters:
    ///   - host: An IP address literal to bind to: `"0.0.0.0"` for every IPv4 address, `"::"` for dual stack,
    ///     `"127.0.0.1"` for loopback only.
    ///   - port: The port, or `0` for one the system chooses (read it from ``port``).
    ///   - medium: The medium the accepted channels report.
    ///   - group: The NIO event loops to run on.
    ///   - logger: Where to log; `medium` and `peer` metadata are added.
    ///   - onAccept: Called with each accepted connection, on an NIO event-loop thread: do not block in it. The
    ///     callee owns the channel and must eventually ``TCPEndpointChannel/close()`` it.
    /// - Throws: `NearbyError` with code `.invalidArgument` for a port outside `0...65535`,
    ///   `.endpointIoError` when the address cannot be bound (in use, not an address of this host, …).
    package static func bind(
        host: String = "0.0.0.0",
        port: Int = 0,
        medium: MediumKind = .wifiLAN,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "nearby.tcp"),
        onAccept: @escaping @Sendable (TCPEndpointChannel) -> Void
    ) async throws -> TCPListener {
        guard (0...65_535).contains(port) else {
            throw NearbyError(.invalidArgument, "TCP port \(port) is outside 0...65535")
        }
        var logger = logger
        logger[metadataKey: "medium"] = "\(medium)"
        let childLogger = logger
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 128)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let endpoint = try TCPEndpointChannel.wrapSynchronously(
                        channel, medium: medium, logger: childLogger)
                    childLogger.debug("accepted a connection", metadata: ["peer": "\(endpoint.peerDescription)"])
                    onAccept(endpoint)
                }
            }
        let serverChannel: any Channel
        do {
            serverChannel = try await bootstrap.bind(host: host, port: port).get()
        } catch {
            throw NearbyError(.endpointIoError, "cannot listen on \(host) port \(port): \(error)", cause: error)
        }
        let boundPort = serverChannel.localAddress?.port ?? port
        logger[metadataKey: "listen"] = "\(host):\(boundPort)"
        logger.debug("listening")
        return TCPListener(host: host, port: boundPort, serverChannel: serverChannel, logger: logger)
    }

    /// Stops accepting connections and closes the listening socket. Channels already accepted stay open.
    /// Idempotent.
    package func stop() async {
        do {
            try await serverChannel.close()
            logger.debug("stopped listening")
        } catch {
            // Already closed.
        }
    }

    deinit {
        serverChannel.close(promise: nil)
    }
}
