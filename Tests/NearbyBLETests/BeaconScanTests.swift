import Foundation
import NearbyBLE
import NearbyMessages
import NearbyTestSupport
import NearbyWire
import NearbyCore
import Testing

/// Beacon subscriptions over a Bumble virtual controller: Bumble hosts advertise Eddystone UID, URL and TLM and an
/// iBeacon; our host scans through ``BLEBeaconScanner`` and ``MessageManager`` reports them found, then lost once they
/// stop advertising.
@Suite(
    "Beacons from Bumble advertisers", .serialized,
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"), .timeLimit(.minutes(5)))
struct BeaconScanTests {
    /// (advertiser address, advertising data): the same frames as the CLI's replay test.
    static let advertisers: [(String, String)] = [
        ("F0:00:00:00:00:01", "0201060303AAFE1716AAFE00EE00112233445566778899AABBCCDDEEFF0000"),
        ("F0:00:00:00:00:02", "0201060303AAFE0E16AAFE10EB036578616D706C6500"),
        ("F0:00:00:00:00:03", "0201060303AAFE1116AAFE20000BB8FF800000010000002710"),
        ("F0:00:00:00:00:04", "0201061AFF4C000215011223344556677889" + "9AABBCCDDEEFF000010002C5"),
    ]

    @Test func eddystoneAndIBeaconsFoundWithEveryFieldThenLost() async throws {
        let controllers = try await VirtualControllers.start(Self.advertisers.count + 1)
        defer { controllers.stop() }
        var peers: [RigProcess] = []
        defer { for peer in peers { peer.kill() } }
        for (index, (address, data)) in Self.advertisers.enumerated() {
            // Each advertiser stops after 8 s (killing the process would not stop the emulated controller).
            let peer = try RigProcess.python("peer.py", ["advertise", String(controllers.ports[index]), address, data, "8"])
            peers.append(peer)
            _ = try await peer.waitForLine("READY")
        }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-beacons-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let problems = LockedValue<[String]>([])
        let manager = MessageManager(
            serviceID: "beacons", logger: BLETestEnvironment.logger("beacons"), consent: ConsentStore(directory: scratch),
            permissionRequest: { .grantForThisRun },
            beaconSource: try BLEBeaconScanner(hci: controllers.hci(Self.advertisers.count)),
            onBluetoothProblem: { problem in problems.withLock { $0.append(problem.message) } })
        let subscription = try await manager.subscribe(options: SubscribeOptions(
            beaconStrategy: BeaconStrategy(includeIBeacons: true, lostAfter: .seconds(2)), deviceTypes: .bleBeacons))
        let events = LockedValue<[MessageEvent]>([])
        let collecting = Task { for await event in subscription { events.withLock { $0.append(event) } } }
        defer { collecting.cancel() }

        let found = try await eventually(within: 30, "four beacons found") { () -> [String: Beacon]? in
            let beacons = events.withLock { $0.filter { $0.kind == .found }.compactMap(\.beacon) }
            let byAddress = Dictionary(beacons.map { ($0.address.uppercased(), $0) }, uniquingKeysWith: { first, _ in first })
            return byAddress.count >= 4 ? byAddress : nil
        }
        guard case .eddystoneUID(let namespace, let instance, let uidPower)? = found["F0:00:00:00:00:01"]?.frame else {
            Issue.record("no Eddystone-UID: \(found)")
            return
        }
        #expect(Hex.encode(namespace) == "00112233445566778899" && Hex.encode(instance) == "aabbccddeeff" && uidPower == -18)
        guard case .eddystoneURL(let url, let urlPower)? = found["F0:00:00:00:00:02"]?.frame else {
            Issue.record("no Eddystone-URL: \(found)")
            return
        }
        #expect(url == "https://example.com/" && urlPower == -21)
        guard case .eddystoneTLM(let telemetry)? = found["F0:00:00:00:00:03"]?.frame else {
            Issue.record("no Eddystone-TLM: \(found)")
            return
        }
        #expect(telemetry.batteryMillivolts == 3000 && telemetry.temperatureCelsius == -0.5)
        #expect(telemetry.advertisingCount == 256 && telemetry.uptimeSeconds == 1000)
        guard case .iBeacon(let uuid, let major, let minor, let power)? = found["F0:00:00:00:00:04"]?.frame else {
            Issue.record("no iBeacon: \(found)")
            return
        }
        #expect(uuid.uuidString.lowercased() == "01122334-4556-6778-899a-abbccddeeff0" && major == 1 && minor == 2 && power == -59)
        for beacon in found.values {
            #expect(beacon.rssi < 0 || beacon.rssi == 127, "RSSI \(beacon.rssi)")
        }

        // The advertisers stop after 8 s; each beacon is lost 2 s after its last sighting, and found only once.
        _ = try await eventually(within: 30, "four beacons lost") { () -> Bool? in
            events.withLock { $0.filter { $0.kind == .lost }.count } >= 4 ? true : nil
        }
        #expect(events.withLock { $0.filter { $0.kind == .found }.count } == 4, "\(events.withLock { $0 })")
        #expect(problems.withLock { $0 }.isEmpty)
        await subscription.cancel()
    }
}
