import Foundation
import NearbyTestSupport
import Testing

/// The `nearby` CLI with `--medium ble --hci tcp:...`: advertise in one process, send from another.
@Suite(
    "nearby CLI over BLE", .serialized,
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"), .timeLimit(.minutes(5)))
struct BLECLITests {
    static func nearbyExecutable() throws -> String {
        var candidates: [String] = []
        if let cli = ProcessInfo.processInfo.environment["NEARBY_CLI"] { candidates.append(cli) }
        if let runner = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: runner).deletingLastPathComponent().appendingPathComponent("nearby").path)
        }
        candidates.append(BLETestEnvironment.repoRoot + "/.build/debug/nearby")
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw RigFailure("the nearby executable is not built (looked at \(candidates))")
        }
        return found
    }

    @Test func advertiseAndSendOverBLE() async throws {
        try await advertiseAndSend(upgrade: false)
    }

    @Test(
        "With --medium ble and no --no-upgrade, the connection moves to Wi-Fi LAN and both print medium_changed",
        .enabled(if: BLETestEnvironment.inTestNetwork, "needs the veth addresses of scripts/with-test-network.sh"))
    func advertiseAndSendWithUpgrade() async throws {
        try await advertiseAndSend(upgrade: true)
    }

    /// `nearby advertise` and `nearby send` over BLE, bytes and a file; with `upgrade` false the advertiser passes
    /// `--no-upgrade`, so everything goes over the L2CAP channel.
    func advertiseAndSend(upgrade: Bool) async throws {
        let nearby = try Self.nearbyExecutable()
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-ble-cli-\(UUID().uuidString.prefix(8))")
        let inbox = scratch.appendingPathComponent("inbox")
        try FileManager.default.createDirectory(at: inbox, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let file = scratch.appendingPathComponent("payload.bin")
        try Data(patternBytes(150_000, seed: 77)).write(to: file)

        let advertiser = try RigProcess([
            nearby, "advertise", "--service-id", "com.example.ble.cli", "--name", "kiosk", "--accept", "--json",
            "--receive-dir", inbox.path, "--medium", "ble", "--hci", controllers.hci(0),
        ] + (upgrade ? [] : ["--no-upgrade"]))
        defer { advertiser.kill() }
        _ = try await advertiser.waitForLine("{\"discoverable\":true")
        let sender = try RigProcess([
            nearby, "send", "--service-id", "com.example.ble.cli", "--to-name", "kiosk", "--name", "laptop", "--accept",
            "--json", "--bytes", "hello over ble", "--file", file.path, "--medium", "ble", "--hci", controllers.hci(1),
        ])
        defer { sender.kill() }
        _ = try await eventually(within: 120, "the sender to exit") { sender.isRunning ? nil : true }
        #expect(sender.output.contains("\"event\":\"payload_sent\""), "\(sender.output.suffix(2000))")
        let received = inbox.appendingPathComponent("payload.bin")
        _ = try await eventually(within: 30, "the file at the advertiser") {
            advertiser.output.contains("\"path\":\"\(received.path)\"") ? true : nil
        }
        #expect(try Data(contentsOf: received) == Data(patternBytes(150_000, seed: 77)))
        #expect(advertiser.output.contains("\"size\":14,\"text\":\"hello over ble\",\"type\":\"bytes\""))
        let moved = "\"event\":\"medium_changed\",\"medium\":\"wifi-lan\""
        #expect(advertiser.output.contains(moved) == upgrade, "\(advertiser.output.suffix(2000))")
        #expect(sender.output.contains(moved) == upgrade, "\(sender.output.suffix(2000))")
    }

    /// No `--hci` and no `bluetoothd` on the test network's system bus: `--medium ble` fails, naming the radios.
    @Test func bleWithoutHCIOrBlueZFails() async throws {
        let nearby = try Self.nearbyExecutable()
        let process = try RigProcess([nearby, "discover", "--service-id", "x", "--medium", "ble", "--timeout", "1"])
        _ = try await eventually(within: 30, "the CLI to exit") { process.isRunning ? nil : true }
        #expect(process.output.contains("--hci"))
        #expect(process.output.contains("bluetoothUnavailable"))
    }
}
