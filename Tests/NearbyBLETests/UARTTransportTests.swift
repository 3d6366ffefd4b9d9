import Foundation
import NearbyWire
import Testing

import NearbyBLE

#if canImport(Glibc)
import Glibc
#endif

/// The UART transport on a pseudo-terminal: raw mode, bytes both ways unchanged (no echo, no CR/LF mapping).
@Suite("UART transport", .timeLimit(.minutes(5)))
struct UARTTransportTests {
    @Test func bytesPassThroughARawPseudoTerminal() async throws {
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        defer { close(master) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        try #require(ioctl(master, UInt(0x4004_5431), &unlock) == 0)  // TIOCSPTLCK
        try #require(ioctl(master, UInt(0x8004_5430), &number) == 0)  // TIOCGPTN
        let path = "/dev/pts/\(number)"
        let transport = try HCITransportFactory.open(.uart(path: path, baudRate: 1_000_000))
        defer { transport.close() }
        // Host to controller: an HCI_Reset with bytes a cooked terminal would mangle (0x0a, 0x0d, 0x03).
        let command: [UInt8] = [0x01, 0x03, 0x0C, 0x03, 0x0A, 0x0D, 0x03]
        try transport.write(command)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while received.count < command.count {
            var pfd = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            try #require(poll(&pfd, 1, 5000) == 1)
            let n = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
            try #require(n > 0)
            received += buffer[0..<n]
        }
        #expect(received == command)
        // Controller to host: one whole event (the transport frames H4 packets), carrying 0x0d and 0x0a.
        let event: [UInt8] = [0x04, 0x0E, 0x06, 0x01, 0x03, 0x0C, 0x00, 0x0D, 0x0A]
        _ = event.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
        var inbound: [UInt8] = []
        for try await chunk in transport.inbound {
            inbound += chunk
            if inbound.count >= event.count { break }
        }
        #expect(inbound == event)
    }

    @Test func missingDeviceFailsClearly() {
        #expect(throws: NearbyError.self) {
            try HCITransportFactory.open(.uart(path: "/dev/nonexistent-hci-uart", baudRate: 115_200))
        }
    }
}
