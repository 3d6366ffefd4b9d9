import NearbyTestSupport
import Foundation
import NearbyWiFiLAN
import NearbyWire

import Glibc

/// Thrown when a TCP or Wi-Fi LAN medium test waited too long; every wait is bounded so that nothing hangs.
struct TCPTestTimeout: Error, CustomStringConvertible {
    var description: String
}

/// Runs `body` and returns the `NearbyError` it threw; records nothing itself, so callers check the code.
func tcpCaughtError(_ body: () async throws -> Void) async -> (any Error)? {
    do {
        try await body()
        return nil
    } catch {
        return error
    }
}

/// Accepted channels of a test listener, in arrival order.
final class TCPAcceptedChannels: Sendable {
    let stream: AsyncStream<TCPEndpointChannel>
    let continuation: AsyncStream<TCPEndpointChannel>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: TCPEndpointChannel.self)
    }

    /// The callback to pass as `onAccept`.
    var onAccept: @Sendable (TCPEndpointChannel) -> Void {
        { [continuation] channel in continuation.yield(channel) }
    }

    /// The next accepted channel, waiting at most `seconds`.
    func next(within seconds: Double = 5) async throws -> TCPEndpointChannel {
        let stream = self.stream
        return try await withTestTimeout(seconds, "an accepted connection") {
            var iterator = stream.makeAsyncIterator()
            guard let channel = await iterator.next() else {
                throw TCPTestTimeout(description: "accept stream ended")
            }
            return channel
        }
    }
}

/// A connected pair of channels on 127.0.0.1: `client` made by ``TCPConnector``, `server` accepted by a
/// ``TCPListener`` (already stopped; accepted channels stay open).
func makeTCPPair() async throws -> (client: TCPEndpointChannel, server: TCPEndpointChannel) {
    let accepted = TCPAcceptedChannels()
    let listener = try await TCPListener.bind(host: "127.0.0.1", port: 0, onAccept: accepted.onAccept)
    let client = try await TCPConnector.connect(hosts: ["127.0.0.1"], port: listener.port)
    let server = try await accepted.next()
    await listener.stop()
    return (client, server)
}

/// Bytes of frame `index` of a test stream: `count` bytes that depend on the index and the position.
func tcpTestFrame(index: Int, count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBufferPointer { buffer in
        for position in 0..<count {
            buffer[position] = UInt8(truncatingIfNeeded: index &* 31 &+ position)
        }
    }
    return bytes
}

/// Whether `bytes` are frame `index` of ``tcpTestFrame(index:count:)`` with `count` bytes.
func isTCPTestFrame(_ bytes: [UInt8], index: Int, count: Int) -> Bool {
    guard bytes.count == count else { return false }
    return bytes.withUnsafeBufferPointer { buffer in
        for position in 0..<count where buffer[position] != UInt8(truncatingIfNeeded: index &* 31 &+ position) {
            return false
        }
        return true
    }
}

/// A plain blocking POSIX TCP client, independent of NIO, used to play a misbehaving peer on loopback.
final class RawTCPClient: @unchecked Sendable {
    private var descriptor: Int32

    /// Connects to `127.0.0.1:port`.
    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw POSIXError(.init(rawValue: code) ?? .EIO)
        }
    }

    /// Sends all of `bytes`.
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { buffer in
                Glibc.send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
            offset += sent
        }
    }

    /// Closes the socket (a FIN to the peer). Idempotent.
    func close() {
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
    }

    deinit {
        close()
    }
}
