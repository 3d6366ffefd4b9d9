import Foundation
import NearbyTestSupport
import Testing

@testable import NearbyBlueZ

/// The `nearby` CLI without `--hci`: its system bus (`DBUS_SYSTEM_BUS_ADDRESS`) is a private bus, with or
/// without a fake `bluetoothd`. Each run takes a few seconds (process start, a 2 s discovery).
@Suite(.timeLimit(.minutes(5))) struct BlueZDefaultCLITests {
    static func nearbyExecutable() throws -> String {
        var candidates: [String] = []
        if let cli = ProcessInfo.processInfo.environment["NEARBY_CLI"] { candidates.append(cli) }
        if let runner = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: runner).deletingLastPathComponent().appendingPathComponent("nearby").path)
        }
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        candidates.append(repo.appendingPathComponent(".build/debug/nearby").path)
        let found = candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
        return try #require(found, "the nearby executable is not built (looked at \(candidates))")
    }

    /// Runs `nearby ARGS` with `bus` as its system bus; returns its exit status and output.
    static func run(_ arguments: [String], systemBus bus: PrivateBus) async throws -> (status: Int32, output: String) {
        let log = bus.directory.appendingPathComponent("nearby.log").path
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        let process = try SpawnedProcess(try nearbyExecutable(), arguments, environment: environment, outputPath: log)
        let status = try await process.waitForExit(within: 60, "nearby \(arguments.joined(separator: " "))")
        return (status, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    @Test func explicitBLEWithoutHCIAndWithoutBlueZFailsWithBluetoothUnavailable() async throws {
        try await withPrivateBus { bus in
            let (status, output) = try await Self.run(
                ["discover", "--service-id", "x", "--medium", "ble", "--timeout", "1"], systemBus: bus)
            #expect(status != 0, "\(output)")
            #expect(output.contains("bluetoothUnavailable"), "\(output)")
            #expect(output.contains("bluetoothd is not on the system bus"), "\(output)")
        }
    }

    @Test func explicitBLEWithoutHCIUsesBlueZWhenBluetoothdRuns() async throws {
        try await withPrivateBus { bus in
            let daemon = try await FakeBlueZ(bus: bus)
            let (status, output) = try await Self.run(
                ["discover", "--service-id", "x", "--medium", "ble", "--timeout", "2", "--verbose"],
                systemBus: bus)
            #expect(status == 0, "\(output)")
            #expect(output.contains("controller=bluez:hci0"), "\(output)")
            // Discovery went through the (fake) bluetoothd: LE discovery was started on its adapter.
            #expect(daemon.adapterCalls.withLock { $0.map(\.0) }.contains("StartDiscovery"), "\(output)")
            await daemon.connection.close()
        }
    }

    @Test func beaconsWithoutHCIAndWithoutBlueZSaysWhy() async throws {
        try await withPrivateBus { bus in
            let (status, output) = try await Self.run(["beacons", "--timeout", "1"], systemBus: bus)
            #expect(status == 1, "\(output)")
            #expect(output.contains("bluetoothd is not on the system bus"), "\(output)")
            #expect(output.contains("--hci"), "\(output)")
        }
    }

    @Test func beaconsWithoutHCIScansThroughBlueZWhenBluetoothdRuns() async throws {
        try await withPrivateBus { bus in
            let daemon = try await FakeBlueZ(bus: bus)
            let (status, output) = try await Self.run(["beacons", "--timeout", "2", "--verbose"], systemBus: bus)
            #expect(status == 0, "\(output)")
            #expect(output.contains("BlueZ found: bluez:hci0"), "\(output)")
            #expect(daemon.adapterCalls.withLock { $0.map(\.0) }.contains("StartDiscovery"), "\(output)")
            await daemon.connection.close()
        }
    }

    /// The CLI contract's `bluetooth_status` line: the adapter powered off, then on again, under `nearby discover`.
    @Test func bluetoothStatusLinesReportPowerOffAndItsClearing() async throws {
        try await withPrivateBus { bus in
            let daemon = try await FakeBlueZ(bus: bus)
            let log = bus.directory.appendingPathComponent("discover.log").path
            var environment = ProcessInfo.processInfo.environment
            environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
            let process = try SpawnedProcess(
                try Self.nearbyExecutable(),
                ["discover", "--service-id", "x", "--medium", "ble", "--json", "--timeout", "60"],
                environment: environment, outputPath: log)
            defer { process.stopBlocking() }
            func lines() -> [String] {
                ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
                    .filter { $0.contains("\"event\":\"bluetooth_status\"") }
            }
            _ = try await eventually(within: 30, "discovery started on the fake bluetoothd") {
                daemon.adapterCalls.withLock { $0.map(\.0) }.contains("StartDiscovery") ? true : nil
            }
            try await daemon.setPowered(false)
            let off = try await eventually(within: 30, "bluetooth_status has_error true") { lines().first }
            #expect(off.contains("\"has_error\":true"), "\(off)")
            #expect(off.contains("\"problem\":\"poweredOff\""), "\(off)")
            try await daemon.setPowered(true)
            let on = try await eventually(within: 30, "bluetooth_status has_error false") {
                lines().count >= 2 ? lines()[1] : nil
            }
            #expect(on.contains("\"has_error\":false"), "\(on)")
            #expect(!on.contains("\"problem\""), "\(on)")
            process.stopBlocking()
            await daemon.connection.close()
        }
    }
}
