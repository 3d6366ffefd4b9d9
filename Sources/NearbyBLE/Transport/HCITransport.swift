#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NearbyWire

/// A byte pipe to an HCI controller carrying H4-framed packets.
public protocol HCITransport: AnyObject, Sendable {
    /// A description for logs.
    var description: String { get }
    /// Bytes from the controller, in arbitrary pieces. Finishes with an error when the controller goes away, and
    /// without one after ``close()``. Iterate it once.
    var inbound: AsyncThrowingStream<[UInt8], any Error> { get }
    /// Writes all of `bytes`.
    /// - Throws: `.endpointIoError` when the transport is closed or broken.
    func write(_ bytes: [UInt8]) throws
    /// Closes the transport. Idempotent.
    func close()
}

/// Opens the transport a ``HCITransportSpec`` names.
public enum HCITransportFactory {
    /// Opens `spec`.
    /// - Throws: ``NearbyWire/NearbyError`` `.mediumUnavailable` naming the cause when the controller cannot be
    ///   reached (connection refused, no such device, no Bluetooth in the kernel).
    public static func open(_ spec: HCITransportSpec) throws -> any HCITransport {
        switch spec {
        case .tcp(let host, let port): return try FileDescriptorTransport(fd: connectTCP(host: host, port: port), description: spec.description)
        case .uart(let path, let baud): return try FileDescriptorTransport(fd: openUART(path: path, baudRate: baud), description: spec.description)
        case .hciUserChannel(let index): return try FileDescriptorTransport(fd: openUserChannel(index: index), description: spec.description)
        }
    }

    static func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    static func connectTCP(host: String, port: Int) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var result: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &result)
        guard rc == 0, let first = result else {
            throw NearbyError(.mediumUnavailable, "HCI controller tcp:\(host):\(port): cannot resolve host (\(String(cString: gai_strerror(rc))))")
        }
        defer { freeaddrinfo(first) }
        var lastError: Int32 = 0
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
            if fd >= 0 {
                if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                    var one: Int32 = 1
                    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    return fd
                }
                lastError = errno
                _ = Glibc.close(fd)
            } else {
                lastError = errno
            }
            cursor = info.pointee.ai_next
        }
        throw NearbyError(.mediumUnavailable, "HCI controller tcp:\(host):\(port): \(errnoText(lastError))")
    }

    static func openUART(path: String, baudRate: Int) throws -> Int32 {
        let fd = Glibc.open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw NearbyError(.mediumUnavailable, "HCI UART \(path): \(errnoText())") }
        var tio = termios()
        guard tcgetattr(fd, &tio) == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw NearbyError(.mediumUnavailable, "HCI UART \(path) is not a terminal: \(errnoText(e))")
        }
        cfmakeraw(&tio)
        tio.c_cflag |= tcflag_t(CLOCAL) | tcflag_t(CREAD) | tcflag_t(CRTSCTS)
        let speeds: [Int: speed_t] = [
            9600: speed_t(B9600), 19200: speed_t(B19200), 38400: speed_t(B38400), 57600: speed_t(B57600),
            115200: speed_t(B115200), 230400: speed_t(B230400), 460800: speed_t(B460800), 921600: speed_t(B921600),
            1000000: speed_t(B1000000), 2000000: speed_t(B2000000), 3000000: speed_t(B3000000),
        ]
        guard let speed = speeds[baudRate] else {
            _ = Glibc.close(fd)
            throw NearbyError(.invalidArgument, "HCI UART \(path): unsupported baud rate \(baudRate)")
        }
        cfsetispeed(&tio, speed)
        cfsetospeed(&tio, speed)
        guard tcsetattr(fd, TCSANOW, &tio) == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw NearbyError(.mediumUnavailable, "HCI UART \(path): cannot set raw mode: \(errnoText(e))")
        }
        return fd
    }

    /// `struct sockaddr_hci` from the Linux kernel headers.
    private struct SockaddrHCI {
        var family: UInt16
        var device: UInt16
        var channel: UInt16
    }

    static func openUserChannel(index: Int) throws -> Int32 {
        let afBluetooth: Int32 = 31
        let btprotoHCI: Int32 = 1
        let hciChannelUser: UInt16 = 1
        let fd = socket(afBluetooth, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), btprotoHCI)
        guard fd >= 0 else {
            let e = errno
            if e == EAFNOSUPPORT || e == EPROTONOSUPPORT {
                throw NearbyError(
                    .mediumUnavailable,
                    "HCI user channel hci:\(index): this kernel has no Bluetooth support (socket(AF_BLUETOOTH): \(errnoText(e))); use tcp:HOST:PORT or uart:/dev/ttyX")
            }
            throw NearbyError(.mediumUnavailable, "HCI user channel hci:\(index): socket(AF_BLUETOOTH): \(errnoText(e))")
        }
        var address = SockaddrHCI(family: UInt16(afBluetooth), device: UInt16(index), channel: hciChannelUser)
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<SockaddrHCI>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            _ = Glibc.close(fd)
            throw NearbyError(
                .mediumUnavailable,
                "HCI user channel hci:\(index): bind failed: \(errnoText(e)) (the adapter must exist and be down, and the process needs CAP_NET_ADMIN)")
        }
        return fd
    }
}

/// An ``HCITransport`` over a file descriptor (TCP socket, UART, HCI socket). A dedicated thread reads with
/// `poll`/`read`; writes are synchronous and serialised.
final class FileDescriptorTransport: HCITransport, @unchecked Sendable {
    let description: String
    let inbound: AsyncThrowingStream<[UInt8], any Error>
    private let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    private let lock = NSLock()
    private let fd: Int32
    private var closed = false
    private var fdReleased = false

    init(fd: Int32, description: String) {
        self.fd = fd
        self.description = description
        (inbound, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self, throwing: (any Error).self)
        let thread = Thread { [self] in self.readLoop() }
        thread.name = "hci-reader"
        thread.start()
    }

    private var isClosed: Bool { lock.withLock { closed } }

    private func readLoop() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !isClosed {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, 200)
            if ready == 0 { continue }
            if ready < 0 {
                if errno == EINTR { continue }
                finish(NearbyError(.endpointIoError, "HCI transport \(description): poll failed: \(HCITransportFactory.errnoText())"))
                break
            }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                continuation.yield(Array(buffer[0..<n]))
            } else if n == 0 {
                finish(NearbyError(.mediumUnavailable, "HCI transport \(description): the controller closed the connection"))
                break
            } else if errno != EINTR && errno != EAGAIN {
                finish(NearbyError(.mediumUnavailable, "HCI transport \(description): read failed: \(HCITransportFactory.errnoText())"))
                break
            }
        }
        continuation.finish()
        lock.withLock {
            closed = true
            if !fdReleased {
                fdReleased = true
                _ = Glibc.close(fd)
            }
        }
    }

    private func finish(_ error: NearbyError) {
        if isClosed { continuation.finish() } else { continuation.finish(throwing: error) }
    }

    func write(_ bytes: [UInt8]) throws {
        try lock.withLock {
            guard !closed else { throw NearbyError(.endpointIoError, "HCI transport \(description) is closed") }
            var offset = 0
            while offset < bytes.count {
                let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n < 0 {
                    if errno == EINTR { continue }
                    if errno == ENOTSOCK {
                        let w = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                        if w < 0 { throw NearbyError(.endpointIoError, "HCI transport \(description): write failed: \(HCITransportFactory.errnoText())") }
                        offset += w
                        continue
                    }
                    throw NearbyError(.endpointIoError, "HCI transport \(description): write failed: \(HCITransportFactory.errnoText())")
                }
                offset += n
            }
        }
    }

    func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            _ = shutdown(fd, Int32(SHUT_RDWR))
        }
    }
}
