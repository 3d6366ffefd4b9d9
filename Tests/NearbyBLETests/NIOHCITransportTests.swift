import NearbyWire
import Testing

@testable import NearbyBLE

#if canImport(Glibc)
import Glibc
#endif

/// The SwiftNIO HCI transport on one end of a socket pair, the test playing the controller on the other end.
@Suite("NIO HCI transport", .timeLimit(.minutes(5)))
struct NIOHCITransportTests {
    private static let event: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
    private static let acl: [UInt8] = [0x02, 0x01, 0x00, 0x03, 0x00, 0xA, 0xB, 0xC]

    @Test(.timeLimit(.minutes(1)))
    func packetsSplitAnywhereArriveWhole() async throws {
        let (transport, controller) = try await Self.pair(SOCK_STREAM)
        defer { transport.close(); _ = Glibc.close(controller) }
        let stream = Self.event + Self.acl
        for piece in [stream[0..<1], stream[1..<9], stream[9...]] {
            try Self.send(Array(piece), to: controller)
        }
        var iterator = transport.inbound.makeAsyncIterator()
        #expect(try await iterator.next() == Self.event)
        #expect(try await iterator.next() == Self.acl)
    }

    @Test(.timeLimit(.minutes(1)))
    func writesReachTheController() async throws {
        let (transport, controller) = try await Self.pair(SOCK_STREAM)
        defer { transport.close(); _ = Glibc.close(controller) }
        let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
        try transport.write(reset)
        try transport.write(Self.acl)
        #expect(try Self.receive(reset.count + Self.acl.count, from: controller) == reset + Self.acl)
    }

    @Test(.timeLimit(.minutes(1)))
    func anUnknownIndicatorEndsTheStreamAsCorrupt() async throws {
        let (transport, controller) = try await Self.pair(SOCK_STREAM)
        defer { transport.close(); _ = Glibc.close(controller) }
        try Self.send(Self.event + [0x09, 0x00, 0x00], to: controller)
        var iterator = transport.inbound.makeAsyncIterator()
        #expect(try await iterator.next() == Self.event)
        let error = await #expect(throws: NearbyError.self) { _ = try await iterator.next() }
        #expect(error?.code == .mediumUnavailable)
        #expect(error?.message.contains("corrupt") == true)
    }

    @Test(.timeLimit(.minutes(1)))
    func theControllerGoingAwayEndsTheStreamWithAnError() async throws {
        let (transport, controller) = try await Self.pair(SOCK_STREAM)
        defer { transport.close() }
        _ = Glibc.close(controller)
        let error = await #expect(throws: NearbyError.self) { for try await _ in transport.inbound {} }
        #expect(error?.code == .mediumUnavailable)
        #expect(throws: NearbyError.self) { try transport.write([0x01, 0x03, 0x0C, 0x00]) }
    }

    @Test(.timeLimit(.minutes(1)))
    func closingEndsTheStreamWithoutAnError() async throws {
        let (transport, controller) = try await Self.pair(SOCK_STREAM)
        defer { _ = Glibc.close(controller) }
        transport.close()
        transport.close()  // idempotent
        for try await _ in transport.inbound {}
        #expect(throws: NearbyError.self) { try transport.write([0x01, 0x03, 0x0C, 0x00]) }
    }

    /// The user channel takes one packet per write: packets queued while the socket is full still leave one per
    /// `write(2)` (a sequenced-packet socket keeps the boundaries, as the HCI socket does), in order.
    @Test(.timeLimit(.minutes(1)))
    func userChannelWritesKeepOnePacketPerWrite() async throws {
        let (transport, controller) = try await Self.pair(SOCK_SEQPACKET, isUserChannel: true)
        defer { transport.close(); _ = Glibc.close(controller) }
        let count = 600  // more than the socket holds (net.unix.max_dgram_qlen, the small send buffer)
        for index in 0..<count {
            try transport.write([0x02, 0x01, 0x00, 0x2C, 0x01] + [UInt8](repeating: UInt8(index % 251), count: 300))
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        for index in 0..<count {
            var pfd = pollfd(fd: controller, events: Int16(POLLIN), revents: 0)
            try #require(poll(&pfd, 1, 10_000) == 1)
            let n = buffer.withUnsafeMutableBytes { recv(controller, $0.baseAddress, $0.count, 0) }
            try #require(n == 305, "packet \(index) arrived as \(n) bytes")
            #expect(buffer[5] == UInt8(index % 251))
        }
    }

    // MARK: - Helpers

    private static func pair(_ type: __socket_type, isUserChannel: Bool = false) async throws -> (any HCITransport, Int32) {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(type.rawValue), 0, &fds) == 0)
        var small: Int32 = 4096
        _ = setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let transport = try await HCITransportFactory.adopting(fds[0], description: "test", isUserChannel: isUserChannel).get()
        return (transport, fds[1])
    }

    private static func send(_ bytes: [UInt8], to fd: Int32) throws {
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        try #require(n == bytes.count)
    }

    private static func receive(_ count: Int, from fd: Int32) throws -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while received.count < count {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            try #require(poll(&pfd, 1, 10_000) == 1)
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            try #require(n > 0)
            received += buffer[0..<n]
        }
        return received
    }
}
