import ArgumentParser
import Foundation
import Logging
import NearbyBLE
import NearbyConnections
import NearbyCore
import NearbyWiFiLAN

/// `nearby-bench ble-upgrade`: what the bandwidth upgrade buys. Two pairs of our stacks on four controllers:
///
/// 1. BLE only (the advertiser does not upgrade): a file over the L2CAP connection.
/// 2. Upgrade on: the time from `connected` (on BLE) to both sides reporting Wi-Fi LAN, then a file over the
///    upgraded connection, next to a plain TCP copy of the same file in the same run.
///
/// Needs a non-loopback address for the upgrade (run it in `scripts/with-test-network.sh`);
/// `Benchmarks/ble-upgrade.sh` starts the controllers and runs it there.
struct BLEUpgradeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ble-upgrade", abstract: "File throughput over BLE, upgrade time, and throughput after the upgrade.")

    @Option(help: "A controller (give four): tcp:HOST:PORT, uart:/dev/ttyX[@BAUD] or hci:N.")
    var hci: [String]

    @Option(help: "File size over BLE.")
    var bleBytes = 300_000

    @Option(help: "File size after the upgrade.")
    var bytes = 20_000_000

    @Flag(help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard hci.count == 4 else { throw ValidationError("give --hci four times") }
    }

    func run() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-bench-upgrade-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }

        // 1. BLE only.
        let blePair = try await UpgradePair.connect(hci: hci[0], hci[1], upgrade: false, directory: scratch)
        let bleSeconds = try await blePair.sendFile(size: bleBytes, scratch: scratch)
        await blePair.close()

        // 2. Upgrade, then a file over Wi-Fi LAN.
        let upgraded = try await UpgradePair.connect(hci: hci[2], hci[3], upgrade: true, directory: scratch)
        let upgradeSeconds = try await upgraded.waitForUpgrade()
        let upgradedSeconds = try await upgraded.sendFile(size: bytes, scratch: scratch)
        await upgraded.close()

        // Plain TCP, same size, same run.
        let plainDirectory = scratch.appendingPathComponent("plain")
        try FileManager.default.createDirectory(at: plainDirectory, withIntermediateDirectories: true)
        let port = try PlainTCP.serve(directory: plainDirectory)
        let source = scratch.appendingPathComponent("plain-source.bin")
        try Data(count: bytes).write(to: source)
        let plainSeconds = try PlainTCP.transfer(port: port, mode: "F", total: bytes, file: source.path)

        let bleRate = Double(bleBytes) / bleSeconds
        let upgradedRate = Double(bytes) / upgradedSeconds
        let plainRate = Double(bytes) / plainSeconds
        if json {
            print(String(
                format: "{\"benchmark\":\"ble_upgrade\",\"ble_file_bytes_per_second\":%.0f,\"upgrade_seconds\":%.3f,"
                    + "\"upgraded_file_bytes_per_second\":%.0f,\"plain_tcp_bytes_per_second\":%.0f,"
                    + "\"upgraded_vs_ble\":%.1f,\"upgraded_vs_plain_tcp\":%.2f}",
                bleRate, upgradeSeconds, upgradedRate, plainRate, upgradedRate / bleRate, upgradedRate / plainRate))
        } else {
            print(String(format: "file over BLE:           %.1f KB/s (%d bytes)", bleRate / 1e3, bleBytes))
            print(String(format: "upgrade BLE -> Wi-Fi LAN: %.3f s after connected", upgradeSeconds))
            print(String(format: "file after the upgrade:  %.1f MB/s (%d bytes) = %.1fx BLE, %.2fx plain TCP (%.1f MB/s)",
                         upgradedRate / 1e6, bytes, upgradedRate / bleRate, upgradedRate / plainRate, plainRate / 1e6))
        }
    }
}

/// Two connected managers over BLE (advertiser and discoverer), with Wi-Fi LAN available for the upgrade.
private struct UpgradePair {
    let advertiser: ConnectionManager
    let discoverer: ConnectionManager
    let advertiserEvents: BenchEventLog
    let discovererEvents: BenchEventLog
    let advertising: Advertiser
    let discovery: Discoverer
    let mediums: [BLEMedium]
    let peer: EndpointID
    let connectedAt: Double

    static func connect(hci a: String, _ b: String, upgrade: Bool, directory: URL) async throws -> UpgradePair {
        var logger = quietLogger()
        if ProcessInfo.processInfo.environment["NEARBY_BENCH_DEBUG"] == "1" { logger.logLevel = .debug }
        func make(_ hci: String, autoUpgrade: Bool) throws -> (ConnectionManager, BLEMedium) {
            let ble = BLEMedium(configuration: .init(transport: try HCITransportSpec(parsing: hci)), logger: logger)
            var options = ConnectionOptions(
                drivers: [ble, WiFiLANMedium(logger: logger)], receiveDirectory: directory, logger: logger)
            options.autoUpgradeBandwidth = autoUpgrade
            return (ConnectionManager(serviceID: "com.example.bench.upgrade", strategy: .pointToPoint, options: options), ble)
        }
        let (advertiser, advertiserBLE) = try make(a, autoUpgrade: upgrade)
        let (discoverer, discovererBLE) = try make(b, autoUpgrade: upgrade)
        let advertiserEvents = BenchEventLog(advertiser)
        let discovererEvents = BenchEventLog(discoverer)
        let advertising = Advertiser(connectionManager: advertiser)
        _ = try await advertising.startAdvertising(using: Data("bench".utf8), mediums: [.ble])
        let discovery = Discoverer(connectionManager: discoverer)
        try await discovery.startDiscovery(mediums: [.ble])
        let peer = try await discovererEvents.wait("discovery", 60) { event -> EndpointID? in
            if case .endpointFound(let id, _, _) = event { return id }
            return nil
        }
        try await discovery.requestConnection(to: peer, using: Data("bench".utf8))
        for (manager, log) in [(advertiser, advertiserEvents), (discoverer, discovererEvents)] {
            let id = try await log.wait("request", 30) { event -> EndpointID? in
                if case .connectionRequested(let id, _, _, _) = event { return id }
                return nil
            }
            try await manager.accept(id)
        }
        _ = try await discovererEvents.wait("connected", 30) { event -> Bool? in
            if case .stateChanged(peer, .connected, _) = event { return true }
            return nil
        }
        let connectedAt = now()
        await discovery.stopDiscoveryAndWait()
        return UpgradePair(
            advertiser: advertiser, discoverer: discoverer, advertiserEvents: advertiserEvents,
            discovererEvents: discovererEvents, advertising: advertising, discovery: discovery, mediums: [advertiserBLE, discovererBLE], peer: peer,
            connectedAt: connectedAt)
    }

    /// Seconds from `connected` until both sides reported Wi-Fi LAN.
    func waitForUpgrade() async throws -> Double {
        for log in [advertiserEvents, discovererEvents] {
            _ = try await log.wait("the upgrade", 60) { event -> Bool? in
                if case .mediumChanged(_, .wifiLAN) = event { return true }
                return nil
            }
        }
        return now() - connectedAt
    }

    /// Sends a file of `size` bytes from the discoverer; returns seconds until the advertiser has it in place.
    func sendFile(size: Int, scratch: URL) async throws -> Double {
        let name = "upgrade-bench-\(size).bin"
        let source = scratch.appendingPathComponent("source-\(size).bin")
        try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: source)
        let start = now()
        _ = try await discoverer.sendResource(at: source, withName: name, to: peer)
        let url = try await advertiserEvents.wait("the file", 600) { event -> URL? in
            if case .fileReceived(_, _, let url, name) = event { return url }
            return nil
        }
        let seconds = now() - start
        try? FileManager.default.removeItem(at: url)
        return seconds
    }

    func close() async {
        await advertising.stopAdvertisingAndWait()
        await discoverer.shutdown()
        await advertiser.shutdown()
        for medium in mediums { await medium.shutdown() }
    }
}

/// Every event of a manager, with waits.
private actor BenchEventLog {
    private var events: [ConnectionEvent] = []

    init(_ manager: ConnectionManager) {
        let stream = manager.events
        Task { await self.consume(stream) }
    }

    private func consume(_ stream: AsyncStream<ConnectionEvent>) async {
        for await event in stream { events.append(event) }
    }

    func wait<Value: Sendable>(
        _ what: String, _ seconds: Double, _ match: @Sendable (ConnectionEvent) -> Value?
    ) async throws -> Value {
        let deadline = now() + seconds
        while true {
            if let value = events.lazy.compactMap(match).first { return value }
            guard now() < deadline else { throw BenchFailure("\(what) did not happen within \(Int(seconds)) s") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
