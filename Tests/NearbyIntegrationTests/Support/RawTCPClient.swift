import Foundation
import NearbyTestSupport
import Glibc
import NearbyWire

/// A plain POSIX TCP client to 127.0.0.1, for speaking nonsense to an advertiser. Blocking calls run on their own
/// thread and every read is bounded by `SO_RCVTIMEO`.
final class RawTCPClient: Sendable {
    /// The socket, for tests that drive it directly (a flood on a thread of its own, `/proc/net/tcp` look-ups).
    let descriptor: Int32

    private init(descriptor: Int32) { self.descriptor = descriptor }

    /// Connects to 127.0.0.1:`port`, with a receive buffer of (about) `receiveBuffer` bytes when given.
    static func connect(port: Int, receiveBuffer: Int32? = nil) async throws -> RawTCPClient {
        try await onOwnThread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw IntegrationFailure("socket: errno \(errno)") }
            if var size = receiveBuffer {
                setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard result == 0 else {
                let error = errno
                Glibc.close(fd)
                throw IntegrationFailure("connect to 127.0.0.1:\(port): errno \(error)")
            }
            return RawTCPClient(descriptor: fd)
        }
    }

    /// Writes all of `bytes` (no SIGPIPE if the peer is gone: that is an error instead).
    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written < 0 {
                if errno == EINTR { continue }
                throw IntegrationFailure("send: errno \(errno)")
            }
            offset += written
        }
    }

    /// Writes `body` with its 4-byte length prefix.
    func sendFrame(_ body: [UInt8]) throws {
        try send(LengthPrefixFraming.frame(body))
    }

    /// Reads one length-prefixed frame.
    func readFrame(timeout: Double) async throws -> [UInt8] {
        let prefix = try await readExactly(4, timeout: timeout)
        return try await readExactly(LengthPrefixFraming.decodeLength(prefix), timeout: timeout)
    }

    /// Reads exactly `count` bytes.
    func readExactly(_ count: Int, timeout: Double) async throws -> [UInt8] {
        let descriptor = self.descriptor
        return try await onOwnThread {
            Self.setReceiveTimeout(descriptor, timeout)
            var out = [UInt8](repeating: 0, count: count)
            var filled = 0
            while filled < count {
                let got = out[filled...].withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if got == 0 { throw IntegrationFailure("the peer closed after \(filled) of \(count) bytes") }
                if got < 0 {
                    if errno == EINTR { continue }
                    throw IntegrationFailure("recv: errno \(errno) after \(filled) of \(count) bytes")
                }
                filled += got
            }
            return out
        }
    }

    /// Reads (and discards) until the peer closes the connection; `false` if it is still open after `timeout`.
    func waitForClose(timeout: Double) async throws -> Bool {
        let descriptor = self.descriptor
        return try await onOwnThread {
            let deadline = Date().addingTimeInterval(timeout)
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while Date() < deadline {
                Self.setReceiveTimeout(descriptor, max(0.05, deadline.timeIntervalSinceNow))
                let got = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
                if got == 0 { return true }
                if got < 0 {
                    switch errno {
                    case EINTR, EAGAIN: continue
                    case ECONNRESET: return true
                    default: throw IntegrationFailure("recv: errno \(errno)")
                    }
                }
            }
            return false
        }
    }

    /// Makes each send give up after `seconds` (it then fails with `EAGAIN`).
    func setSendTimeout(_ seconds: Double) {
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Closes the socket.
    func close() {
        Glibc.close(descriptor)
    }

    private static func setReceiveTimeout(_ descriptor: Int32, _ seconds: Double) {
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }
}
