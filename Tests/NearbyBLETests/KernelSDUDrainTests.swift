import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NearbyCore
import NearbyWire
import Testing

@testable import NearbyBLE

/// ``KernelSDUDrain`` on a Unix `SOCK_SEQPACKET` socket pair, which keeps message boundaries as an L2CAP socket does
/// (this machine's kernel has no Bluetooth; the BlueZ rig runs the drain on real L2CAP sockets).
@Suite(.timeLimit(.minutes(5))) struct KernelSDUDrainTests {
    private static let peer = BLEAddress(hciBytes: [1, 2, 3, 4, 5, 6], kind: .public)!

    /// A connected pair: the reading end non-blocking (as the drain wants it), the writing end blocking; both with
    /// small buffers, so that a writer gets far ahead of them only when the reading end is read.
    private static func pair() throws -> (reader: KernelDescriptor, writer: Int32) {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0 else {
            throw NearbyError(.unknown, "socketpair: errno \(errno)")
        }
        var small: Int32 = 4096
        for fd in fds {
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        }
        // A writer that cannot get on fails after a minute instead of hanging the suite.
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        _ = setsockopt(fds[1], SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
        return (KernelDescriptor(fd: fds[0]), fds[1])
    }

    /// SDU `index` of `size` bytes: its index in the first two bytes, then a pattern.
    private static func sdu(_ index: Int, size: Int) -> [UInt8] {
        (0..<size).map { offset in
            switch offset {
            case 0: UInt8(index >> 8)
            case 1: UInt8(index & 0xFF)
            default: UInt8(truncatingIfNeeded: index &+ offset)
            }
        }
    }

    /// Writes `count` SDUs on its own thread (blocking writes), then closes `fd` when `close` is set; returns how
    /// many were written in full.
    private static func write(_ count: Int, size: Int, to fd: Int32, close: Bool) async -> Int {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let thread = Thread {
                var written = 0
                for index in 0..<count {
                    let bytes = sdu(index, size: size)
                    let result = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                    guard result == size else { break }
                    written += 1
                }
                if close { Glibc.close(fd) }
                continuation.resume(returning: written)
            }
            thread.start()
        }
    }

    @Test("reads SDUs as they arrive, before they are asked for, and hands them over in order")
    func readsAhead() async throws {
        let (reader, writer) = try Self.pair()
        let drain = KernelSDUDrain(descriptor: reader, receiveMTU: 2048, peer: Self.peer)
        // 300 kB through buffers of a few kB: the writer gets through only because the drain reads without being
        // asked (nothing calls next() until the writer is done).
        let written = await Self.write(300, size: 1000, to: writer, close: true)
        #expect(written == 300)
        for index in 0..<300 {
            let sdu = try await drain.next()
            #expect(sdu == Self.sdu(index, size: 1000))
        }
        // The writer closed: the end, after every SDU.
        #expect(try await drain.next() == nil)
        reader.close()
    }

    @Test("pauses above its limit and resumes as the backlog is taken, losing nothing")
    func pausesAndResumes() async throws {
        let (reader, writer) = try Self.pair()
        let drain = KernelSDUDrain(descriptor: reader, receiveMTU: 2048, peer: Self.peer, pauseBytes: 8000)
        async let written = Self.write(400, size: 1500, to: writer, close: true)
        var received = 0
        while let sdu = try await drain.next() {
            #expect(sdu == Self.sdu(received, size: 1500))
            received += 1
        }
        #expect(await written == 400)
        #expect(received == 400)
        reader.close()
    }

    @Test("stop ends the SDUs, also for a reader already waiting, and later SDUs are not read")
    func stopEnds() async throws {
        let (reader, writer) = try Self.pair()
        defer { Glibc.close(writer) }
        let drain = KernelSDUDrain(descriptor: reader, receiveMTU: 2048, peer: Self.peer)
        #expect(await Self.write(1, size: 10, to: writer, close: false) == 1)
        #expect(try await drain.next() == Self.sdu(0, size: 10))
        // Nothing more was written: this next() waits until stop().
        let waiting = Task { try await drain.next() }
        drain.stop()
        #expect(try await waiting.value == nil)
        #expect(await Self.write(1, size: 10, to: writer, close: false) == 1)
        #expect(try await drain.next() == nil)
        reader.close()
    }
}
