import Foundation

/// The plain-TCP baseline: blocking POSIX sockets on 127.0.0.1, no framing beyond a mode byte and a length.
///
/// Modes (first byte a client sends):
/// - `F` + 8-byte big-endian length: the bytes are written to a file in the receiver's directory in 64 KiB
///   writes, fsync'd (as the stack's receiver does), deleted, then one byte is sent back.
/// - `B` + 8-byte length: the bytes are read and dropped, then one byte is sent back.
/// - `P`: echo every byte until the peer closes (one round trip per byte).
enum PlainTCP {
    static let chunk = 65_536

    /// Listens on 127.0.0.1 (port chosen by the system) and serves each connection on its own thread.
    static func serve(directory: URL) throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure("socket: \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 1024) == 0 else { throw BenchFailure("bind/listen: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread {
            var counter = 0
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 {
                    if errno == EINTR { continue }
                    return
                }
                counter += 1
                let path = directory.appendingPathComponent("plain-\(counter).bin").path
                Thread.detachNewThread { handle(client, path: path) }
            }
        }
        return port
    }

    private static func handle(_ fd: Int32, path: String) {
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var mode: UInt8 = 0
        guard readFully(fd, &mode, 1) else { return }
        switch mode {
        case UInt8(ascii: "P"):
            var byte: UInt8 = 0
            while readFully(fd, &byte, 1), writeAll(fd, &byte, 1) {}
        case UInt8(ascii: "F"), UInt8(ascii: "B"):
            var header = [UInt8](repeating: 0, count: 8)
            guard readFully(fd, &header, 8) else { return }
            var remaining = header.reduce(0) { $0 << 8 | Int($1) }
            let out = mode == UInt8(ascii: "F") ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600) : -1
            var buffer = [UInt8](repeating: 0, count: chunk)
            while remaining > 0 {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress!, min(chunk, remaining)) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                if out >= 0 { _ = buffer.withUnsafeBytes { writeAll(out, $0.baseAddress!, count) } }
                remaining -= count
            }
            if out >= 0 {
                fsync(out)
                close(out)
                unlink(path)
            }
            var ack: UInt8 = 1
            _ = writeAll(fd, &ack, 1)
        default:
            return
        }
    }

    // MARK: - Client side

    static func connectTo(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw BenchFailure("connect to 127.0.0.1:\(port): errno \(errno)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// Sends `total` bytes (read from `file` in 64 KiB pieces, or from memory when `file` is nil) and waits for
    /// the receiver's one-byte reply. Returns seconds.
    static func transfer(port: Int, mode: Character, total: Int, file: String?) throws -> Double {
        let start = now()
        let fd = try connectTo(port: port)
        defer { close(fd) }
        var header: [UInt8] = [mode.asciiValue!] + (0..<8).map { UInt8(truncatingIfNeeded: total >> (8 * (7 - $0))) }
        guard writeAll(fd, &header, header.count) else { throw BenchFailure("plain tcp: write failed") }
        let source = file.map { open($0, O_RDONLY) } ?? -1
        defer { if source >= 0 { close(source) } }
        var buffer = [UInt8](repeating: 0x5A, count: chunk)
        var remaining = total
        while remaining > 0 {
            var count = min(chunk, remaining)
            if source >= 0 {
                count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress!, count) }
                guard count > 0 else { throw BenchFailure("plain tcp: source file too short") }
            }
            guard writeAll(fd, &buffer, count) else { throw BenchFailure("plain tcp: write failed") }
            remaining -= count
        }
        var ack: UInt8 = 0
        guard readFully(fd, &ack, 1) else { throw BenchFailure("plain tcp: no reply") }
        return now() - start
    }

    /// Connect + one one-byte round trip; returns seconds.
    static func connectRoundTrip(port: Int) throws -> Double {
        let start = now()
        let fd = try connectTo(port: port)
        defer { close(fd) }
        var bytes: [UInt8] = [UInt8(ascii: "P"), 7]
        guard writeAll(fd, &bytes, 2) else { throw BenchFailure("ping: write failed") }
        var reply: UInt8 = 0
        guard readFully(fd, &reply, 1) else { throw BenchFailure("ping: no reply") }
        return now() - start
    }

    // MARK: - Helpers

    static func readFully(_ fd: Int32, _ pointer: UnsafeMutableRawPointer, _ count: Int) -> Bool {
        var offset = 0
        while offset < count {
            let n = read(fd, pointer + offset, count - offset)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }

    static func writeAll(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Bool {
        var offset = 0
        while offset < count {
            let n = write(fd, pointer + offset, count - offset)
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            offset += n
        }
        return true
    }
}
