import ArgumentParser
import Foundation
import Logging
import NearbyBLE

/// `nearby-bench ble-l2cap-send`: our HCI host as the L2CAP sender (central) against `bumble-bench --mode
/// l2cap-server --scenario receive`, the receiver `bumble-bench`'s own sender is measured against, so both senders
/// are timed by the same receiver.
///
/// It speaks the receiver's packet format: a byte stream of packets, each a 2-byte big-endian length and then
/// the packet (RESET is one byte 0; SEQUENCE is type 1, flags (1 = last), a little-endian 32-bit sequence
/// number and microsecond timestamp, then padding; ACK is type 2, flags, sequence). Every `--packet-size`
/// bytes (length prefix included) go out as one SDU, as `bumble-bench -s` writes them. The sender's figure is
/// `bumble-bench`'s: packet bytes (without the length prefix) from just after RESET until the ACK of the last
/// packet.
struct BLEL2CAPSendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ble-l2cap-send",
        abstract: "One-way L2CAP CoC throughput of the NearbyBLE host into a bumble-bench l2cap-server receiver.")

    @Option(help: "The controller: tcp:HOST:PORT, uart:/dev/ttyX[@BAUD] or hci:N.")
    var hci: String

    @Option(help: "The receiver's address (bumble-bench's peripheral is F1:F1:F1:F1:F1:F1).")
    var peer: String = "F1:F1:F1:F1:F1:F1"

    @Option(help: "The receiver's PSM.")
    var psm: UInt16 = 129

    @Option(help: "Bytes per packet, its 2-byte length prefix included (bumble-bench -s).")
    var packetSize: Int = 1024

    @Option(help: "Packets to send (bumble-bench -c).")
    var count: Int = 976

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard packetSize >= 12, packetSize <= 65_535, count >= 1 else {
            throw ValidationError("--packet-size must be 12...65535 and --count at least 1")
        }
    }

    func run() async throws {
        var logger = Logger(label: "bench") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .error
        guard let address = BLEAddress(string: peer) else { throw ValidationError("bad --peer address") }
        let host = try await BLEHost.open(try HCITransportSpec(parsing: hci), logger: logger)
        let handle = try await host.connect(to: address)
        let channel = try await host.openChannel(handle: handle, psm: psm)

        try await channel.send(BenchPacket.framed([BenchPacket.reset]))
        let start = ContinuousClock.now
        let acknowledged = Task { try await BenchPacket.awaitAck(on: channel) }
        var packetBytes = 0
        for sequence in 0..<count {
            let micros = UInt32(truncatingIfNeeded: (ContinuousClock.now - start).microseconds)
            let packet = BenchPacket.sequence(
                sequence: UInt32(sequence), last: sequence == count - 1, timestamp: micros, size: packetSize - 2)
            packetBytes += packet.count
            try await channel.send(BenchPacket.framed(packet))
        }
        try await acknowledged.value
        let seconds = (ContinuousClock.now - start).seconds
        let rate = Double(packetBytes) / seconds
        if json {
            print(
                "{\"benchmark\":\"ble_l2cap_send\",\"end\":\"sender\",\"bytes\":\(packetBytes),\"seconds\":\(seconds),"
                    + "\"bytes_per_second\":\(Int(rate)),\"sdu\":\(packetSize),\"peer_mtu\":\(channel.peerMTU),"
                    + "\"peer_mps\":\(channel.peerMPS)}")
        } else {
            print(
                "ble-l2cap send: \(packetBytes) bytes in \(String(format: "%.2f", seconds)) s = \(Int(rate)) B/s "
                    + "(SDU \(packetSize), peer MTU \(channel.peerMTU), peer MPS \(channel.peerMPS))")
        }
        await channel.close()
        await host.close()
    }
}

/// `bumble-bench`'s packet format (see ``BLEL2CAPSendCommand``).
enum BenchPacket {
    static let reset: UInt8 = 0
    static let sequenceType: UInt8 = 1
    static let ackType: UInt8 = 2

    /// A SEQUENCE packet of `size` bytes.
    static func sequence(sequence: UInt32, last: Bool, timestamp: UInt32, size: Int) -> [UInt8] {
        var packet = [UInt8](repeating: 0, count: size)
        packet[0] = sequenceType
        packet[1] = last ? 1 : 0
        for byte in 0..<4 {
            packet[2 + byte] = UInt8(truncatingIfNeeded: sequence >> (8 * byte))
            packet[6 + byte] = UInt8(truncatingIfNeeded: timestamp >> (8 * byte))
        }
        return packet
    }

    /// `packet` behind its 2-byte big-endian length.
    static func framed(_ packet: [UInt8]) -> [UInt8] {
        [UInt8(packet.count >> 8), UInt8(packet.count & 0xFF)] + packet
    }

    /// Reads the channel's byte stream until an ACK packet arrives.
    static func awaitAck(on channel: L2CAPChannel) async throws {
        var stream: [UInt8] = []
        while let sdu = try await channel.receive() {
            stream += sdu
            while stream.count >= 2 {
                let length = Int(stream[0]) << 8 | Int(stream[1])
                guard stream.count >= 2 + length else { break }
                if length > 0, stream[2] == ackType { return }
                stream.removeFirst(2 + length)
            }
        }
        throw ValidationError("the receiver closed the channel before acknowledging")
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
    /// The duration in whole microseconds.
    var microseconds: Int64 { components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000 }
}
