import ArgumentParser
import Foundation
import Logging
import NearbyBLE

/// `nearby-bench ble-l2cap`: L2CAP LE credit-based channel throughput of our HCI host against an echo peer (for
/// example `Tests/BLE/peer.py echo`). Writes `--bytes` in SDUs of `--sdu` bytes while reading the echo, and prints
/// bytes per second per direction. `Benchmarks/ble-l2cap.sh` runs it next to `bumble-bench` in the same run.
struct BLEL2CAPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ble-l2cap", abstract: "L2CAP CoC echo throughput of the NearbyBLE host against a peer.")

    @Option(help: "The controller: tcp:HOST:PORT, uart:/dev/ttyX[@BAUD] or hci:N.")
    var hci: String

    @Option(help: "The echo peer's address (static random).")
    var peer: String

    @Option(help: "The peer's PSM.")
    var psm: UInt16 = 129

    @Option(help: "Bytes to send (and receive back).")
    var bytes: Int = 1_000_000

    @Option(help: "SDU size.")
    var sdu: Int = 1000

    @Option(help: "Our MPS.")
    var mps: UInt16 = 1024

    @Flag(help: "Print one JSON object.")
    var json = false

    func run() async throws {
        var logger = Logger(label: "bench") { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = .warning
        var configuration = BLEHost.Configuration()
        configuration.channelParameters = CreditChannelParameters(mtu: 4096, mps: mps, credits: 64)
        let host = try await BLEHost.open(try HCITransportSpec(parsing: hci), configuration: configuration, logger: logger)
        guard let address = BLEAddress(string: peer) else { throw ValidationError("bad --peer address") }
        let handle = try await host.connect(to: address)
        let channel = try await host.openChannel(handle: handle, psm: psm)
        let payload = (0..<sdu).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let total = bytes
        let start = ContinuousClock.now
        let reader = Task { () throws -> Int in
            var received = 0
            while received < total, let data = try await channel.receive() { received += data.count }
            return received
        }
        var sent = 0
        while sent < total {
            let chunk = min(sdu, total - sent)
            try await channel.send(chunk == sdu ? payload : Array(payload.prefix(chunk)))
            sent += chunk
        }
        let received = try await reader.value
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let rate = Double(received) / seconds
        if json {
            print("{\"benchmark\":\"ble_l2cap_echo\",\"bytes\":\(received),\"seconds\":\(seconds),\"bytes_per_second\":\(Int(rate)),\"sdu\":\(sdu),\"peer_mtu\":\(channel.peerMTU),\"peer_mps\":\(channel.peerMPS)}")
        } else {
            print("ble-l2cap echo: \(received) bytes each way in \(String(format: "%.2f", seconds)) s = \(Int(rate)) B/s per direction (SDU \(sdu), peer MTU \(channel.peerMTU), peer MPS \(channel.peerMPS))")
        }
        await channel.close()
        await host.close()
    }
}
