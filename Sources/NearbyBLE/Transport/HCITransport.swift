#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix
import NearbyWire

/// A byte pipe to an HCI controller carrying H4-framed packets.
package protocol HCITransport: AnyObject, Sendable {
    /// A description for logs.
    var description: String { get }
    /// Bytes from the controller, in arbitrary pieces (the transports ``HCITransportFactory`` opens deliver one
    /// whole H4 packet, indicator included, per element). Finishes with an error when the controller goes away,
    /// and without one after ``close()``. Iterate it once.
    var inbound: AsyncThrowingStream<[UInt8], any Error> { get }
    /// Writes all of `bytes`.
    /// - Throws: `.endpointIoError` when the transport is closed or broken.
    func write(_ bytes: [UInt8]) throws
    /// Closes the transport. Idempotent.
    func close()
}

/// Opens the transport a ``HCITransportSpec`` names, as a SwiftNIO channel on the shared event loop group:
/// `ClientBootstrap` for H4 over TCP, `NIOPipeBootstrap` adopting the descriptor of a UART or of the HCI user
/// channel.
package enum HCITransportFactory {
    /// Opens `spec`, blocking the calling thread until the controller is connected (as long as a TCP connect
    /// takes); async code should prefer `connect(_:)`.
    /// - Throws: `NearbyError` `.mediumUnavailable` naming the cause when the controller cannot be
    ///   reached (connection refused, no such device, no Bluetooth in the kernel).
    package static func open(_ spec: HCITransportSpec) throws -> any HCITransport {
        try opening(spec).wait()
    }

    /// Opens `spec` without blocking a thread.
    /// - Throws: as ``open(_:)``.
    package static func connect(_ spec: HCITransportSpec) async throws -> any HCITransport {
        try await opening(spec).get()
    }

    /// Starts opening `spec`; errors found before any I/O (no such device, bad baud rate) are thrown at once.
    static func opening(
        _ spec: HCITransportSpec, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws -> EventLoopFuture<any HCITransport> {
        switch spec {
        case .tcp(let host, let port):
            let (inbound, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self, throwing: (any Error).self)
            let bridge = HCIInboundBridge(description: spec.description, continuation: continuation)
            return ClientBootstrap(group: group)
                .connectTimeout(.seconds(10))
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { NIOHCITransport.configure($0, bridge: bridge, onePacketPerWrite: false) }
                .connect(host: host, port: port)
                .map { NIOHCITransport(channel: $0, bridge: bridge, inbound: inbound) as any HCITransport }
                .flatMapErrorThrowing { error in
                    continuation.finish()
                    throw NearbyError(.mediumUnavailable, "HCI controller \(spec): \(reason(error))")
                }
        case .uart(let path, let baud):
            return adopting(try openUART(path: path, baudRate: baud), description: spec.description, group: group)
        case .hciUserChannel(let index):
            return adopting(
                try openUserChannel(index: index), description: spec.description, group: group, isUserChannel: true)
        }
    }

    /// Wraps an open descriptor (a UART, the HCI user-channel socket, or in tests one end of a socket pair) in a
    /// transport; the transport owns it from here on.
    ///
    /// The user channel hands over one packet per `read` and takes one per `write`: it reads into a buffer large
    /// enough for any packet and writes one buffer at a time.
    static func adopting(
        _ descriptor: Int32, description: String, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        isUserChannel: Bool = false
    ) -> EventLoopFuture<any HCITransport> {
        let (inbound, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self, throwing: (any Error).self)
        let bridge = HCIInboundBridge(description: description, continuation: continuation)
        var bootstrap = NIOPipeBootstrap(group: group)
            .channelInitializer { NIOHCITransport.configure($0, bridge: bridge, onePacketPerWrite: isUserChannel) }
        if isUserChannel {
            bootstrap = bootstrap.channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 65_540))
        }
        return bootstrap.takingOwnershipOfDescriptor(inputOutput: descriptor)
            .map { NIOHCITransport(channel: $0, bridge: bridge, inbound: inbound) as any HCITransport }
            .flatMapErrorThrowing { error in
                continuation.finish()
                throw NearbyError(.mediumUnavailable, "HCI transport \(description): \(reason(error))")
            }
    }

    static func errnoText(_ code: Int32 = errno) -> String { String(cString: strerror(code)) }

    /// The system's words for a socket error (`Connection refused`), or the error's own description.
    static func reason(_ error: any Error) -> String {
        if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first {
            return reason(first.error)
        }
        if let connection = error as? NIOConnectionError, connection.dnsAError != nil || connection.dnsAAAAError != nil {
            return "cannot resolve the host"
        }
        if let io = error as? IOError { return errnoText(io.errnoCode) }
        return "\(error)"
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
