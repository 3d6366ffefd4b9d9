import Foundation
import NearbyCore
import NearbyWiFiLAN
import NearbyWire
import Testing

@testable import NearbyMessages

/// A scanner fed by the test.
final class FakeReportSource: AdvertisingReportSource {
    let continuation: AsyncThrowingStream<AdvertisingReport, any Error>.Continuation
    let stream: AsyncThrowingStream<AdvertisingReport, any Error>
    let settings = LockedValue<[BeaconScanSettings]>([])

    init() {
        (stream, continuation) = AsyncThrowingStream.makeStream()
    }

    func advertisingReports(_ settings: BeaconScanSettings) -> AsyncThrowingStream<AdvertisingReport, any Error> {
        self.settings.withLock { $0.append(settings) }
        return stream
    }
}

@Suite(.timeLimit(.minutes(5))) struct BeaconSubscriptionTests {
    @Test("a beacon subscription over a fake scanner: found with fields and RSSI, lost after it stops")
    func foundAndLost() async throws {
        let source = FakeReportSource()
        let manager = try testManager("beacons", beaconSource: source)
        let options = SubscribeOptions(
            beaconStrategy: BeaconStrategy(includeIBeacons: true, lostAfter: .seconds(1)), deviceTypes: .bleBeacons)
        let found = LockedValue<[Message]>([])
        let subscription = try await manager.subscribe(options: options, onFound: { m in found.withLock { $0.append(m) } })
        let collector = EventCollector()
        let collecting = collector.collect(subscription)
        defer { collecting.cancel() }
        #expect(await eventually { !source.settings.withLock { $0.isEmpty } })
        // Ten sightings of each, back to back (no pauses, so none can be mistaken for a loss on a slow machine).
        let feeding = Task {
            for _ in 0..<10 {
                source.continuation.yield(AdvertisingReport(address: "AA:BB", rssi: -65, data: hex(BeaconVectors.iBeacon)))
                source.continuation.yield(AdvertisingReport(address: "CC:DD", rssi: -60, data: hex(BeaconVectors.uidFull)))
            }
        }
        #expect(await eventually { collector.events.filter { $0.kind == .found }.count == 2 })
        let iBeacon = try #require(collector.events.first { $0.message.type == BeaconMessageType.iBeaconID })
        #expect(iBeacon.message.namespace == Message.reservedNamespace)
        #expect(iBeacon.beacon?.rssi == -65)
        #expect(iBeacon.beacon?.address == "AA:BB")
        #expect(abs((iBeacon.beacon?.estimatedDistance ?? 0) - 1.995) < 0.01)
        let uid = try #require(collector.events.first { $0.message.type == BeaconMessageType.eddystoneUID })
        #expect(uid.message.content == Data(hex("00112233445566778899AABBCCDDEEFF")))
        #expect(source.settings.withLock { $0 } == [BeaconScanSettings(lowDutyCycle: false)])
        await feeding.value
        #expect(await eventually { collector.events.filter { $0.kind == .lost }.count == 2 })
        #expect(collector.events.filter { $0.kind == .found }.count == 2, "duplicates were reported: \(collector.events)")
        #expect(found.withLock { $0.count } == 2)
        await subscription.cancel()
    }

    @Test("a listener that arrives after the first sightings starts with them, then gets live events once")
    func lateListener() async throws {
        let source = FakeReportSource()
        let manager = try testManager("beacons-late", beaconSource: source)
        let subscription = try await manager.subscribe(options: SubscribeOptions(
            beaconStrategy: BeaconStrategy(includeIBeacons: true, lostAfter: .seconds(3)), deviceTypes: .bleBeacons))
        // A first listener tells when the sighting has been processed; the listener under test comes after that.
        let first = EventCollector()
        let firstCollecting = first.collect(subscription)
        defer { firstCollecting.cancel() }
        source.continuation.yield(AdvertisingReport(address: "AA:BB", rssi: -65, data: hex(BeaconVectors.iBeacon)))
        #expect(await eventually { first.events.count == 1 })
        let collector = EventCollector()
        let collecting = collector.collect(subscription)
        defer { collecting.cancel() }
        #expect(await eventually { collector.events.count == 1 })
        #expect(collector.events.first?.kind == .found && collector.events.first?.beacon?.address == "AA:BB")
        source.continuation.yield(AdvertisingReport(address: "CC:DD", rssi: -60, data: hex(BeaconVectors.uidFull)))
        #expect(await eventually { collector.events.filter { $0.kind == .lost }.count == 2 })
        #expect(collector.events.filter { $0.kind == .found }.count == 2, "\(collector.events)")
        await subscription.cancel()
    }

    @Test("a type filter keeps only matching beacons")
    func filtered() async throws {
        let source = FakeReportSource()
        let manager = try testManager("beacons-filter", beaconSource: source)
        let filter = try MessageFilter.namespacedType(Message.reservedNamespace, BeaconMessageType.eddystoneUID)
        let subscription = try await manager.subscribe(options: SubscribeOptions(deviceTypes: .bleBeacons, filter: filter))
        let collector = EventCollector()
        let collecting = collector.collect(subscription)
        defer { collecting.cancel() }
        source.continuation.yield(AdvertisingReport(address: "AA", rssi: -65, data: hex(BeaconVectors.iBeacon)))
        source.continuation.yield(AdvertisingReport(address: "BB", rssi: -65, data: hex(BeaconVectors.uidFull)))
        #expect(await eventually { collector.found { $0.type == BeaconMessageType.eddystoneUID } })
        // Reports are handled in order: the iBeacon was decided before the Eddystone-UID was found.
        #expect(!collector.found { $0.type == BeaconMessageType.iBeaconID })
        await subscription.cancel()
    }

    @Test("a scanner failure reaches the Bluetooth handler")
    func scannerFailure() async throws {
        let source = FakeReportSource()
        let problems = LockedValue<[NearbyError]>([])
        let manager = try testManager("beacons-fail", beaconSource: source, onBluetoothProblem: { e in problems.withLock { $0.append(e) } })
        let subscription = try await manager.subscribe(options: SubscribeOptions(deviceTypes: .bleBeacons))
        source.continuation.finish(throwing: NearbyError(.bluetoothUnavailable, "HCI transport closed"))
        #expect(await eventually { problems.withLock { $0.first?.code == .bluetoothUnavailable } })
        withExtendedLifetime(subscription) {}
    }
}

@Suite(.timeLimit(.minutes(5))) struct RadioProblemTests {
    @Test("a BLE strategy without an HCI transport fires the Bluetooth handler and fails with bluetoothUnavailable")
    func bluetoothMissing() async throws {
        let problems = LockedValue<[NearbyError]>([])
        let manager = try testManager("ble-missing", onBluetoothProblem: { e in problems.withLock { $0.append(e) } })
        let strategy = MessageStrategy(mediums: .ble)
        let code = await nearbyErrorCode { _ = try await manager.subscribe(options: SubscribeOptions(strategy: strategy)) }
        #expect(code == .bluetoothUnavailable)
        let publishCode = await nearbyErrorCode {
            _ = try await manager.publish(Message(text: "x"), options: PublishOptions(strategy: strategy))
        }
        #expect(publishCode == .bluetoothUnavailable)
        #expect(problems.withLock { $0.count } == 2)
    }

    @Test("a medium provider whose BLE transport cannot be opened fires the Bluetooth handler")
    func transportUnopenable() async throws {
        let problems = LockedValue<[NearbyError]>([])
        let manager = try testManager(
            "ble-unopenable",
            mediums: { kind, _ in
                throw NearbyError(.bluetoothUnavailable, "cannot open HCI transport tcp:127.0.0.1:1: connection refused")
            },
            onBluetoothProblem: { e in problems.withLock { $0.append(e) } })
        _ = await nearbyErrorCode {
            _ = try await manager.subscribe(options: SubscribeOptions(strategy: MessageStrategy(mediums: .ble)))
        }
        #expect(problems.withLock { $0.first?.message.contains("HCI transport") == true })
    }

    @Test("beacon scanning without a scanner fires the Bluetooth handler")
    func noScanner() async throws {
        let problems = LockedValue<[NearbyError]>([])
        let manager = try testManager("no-scanner", onBluetoothProblem: { e in problems.withLock { $0.append(e) } })
        let code = await nearbyErrorCode { _ = try await manager.subscribe(options: SubscribeOptions(deviceTypes: .bleBeacons)) }
        #expect(code == .bluetoothUnavailable)
        #expect(problems.withLock { $0.first?.message.contains("BLE scanning not available") == true })
    }

    /// A Wi-Fi LAN medium whose DNS-SD client cannot start, as when avahi-daemon is not running.
    static let noAvahi: MediumProvider = { kind, logger in
        guard kind == .wifiLAN else { throw NearbyError(.bluetoothUnavailable, "no BLE in this test") }
        return WiFiLANMedium(
            serviceDiscovery: { throw NearbyError(.mediumUnavailable, "avahi-daemon is not running (test)") },
            listenHost: "127.0.0.1", logger: logger)
    }

    @Test("subscribing without avahi-daemon fires the mDNS handler")
    func mdnsMissingSubscribe() async throws {
        let problems = LockedValue<[NearbyError]>([])
        let manager = try testManager("no-avahi-sub", mediums: Self.noAvahi, onMDNSProblem: { e in problems.withLock { $0.append(e) } })
        let subscription = try await manager.subscribe(options: SubscribeOptions(strategy: MessageStrategy(mediums: .wifiLAN)))
        #expect(await eventually { problems.withLock { $0.first?.code == .mediumUnavailable } })
        await subscription.cancel()
    }

    @Test("publishing without avahi-daemon fires the mDNS handler")
    func mdnsMissingPublish() async throws {
        let problems = LockedValue<[NearbyError]>([])
        let manager = try testManager("no-avahi-pub", mediums: Self.noAvahi, onMDNSProblem: { e in problems.withLock { $0.append(e) } })
        let publication = try await manager.publish(
            Message(text: "hello"), options: PublishOptions(strategy: MessageStrategy(mediums: .wifiLAN)))
        #expect(await eventually { problems.withLock { $0.first?.code == .mediumUnavailable } })
        await publication.cancel()
    }
}

@Suite(.timeLimit(.minutes(5))) struct LifetimeTests {
    // The TTLs of publications and subscriptions: FoundLostClockTests, on a manual clock.

    @Test("iterating a subscription keeps it alive; releasing an unused one stops it")
    func iterationKeepsAlive() async throws {
        let source = FakeReportSource()
        let manager = try testManager("alive", beaconSource: source)
        let options = SubscribeOptions(deviceTypes: .bleBeacons)
        let first = Task { () -> String? in
            for await event in try await manager.subscribe(options: options) { return event.message.type }
            return nil
        }
        #expect(await eventually { !source.settings.withLock { $0.isEmpty } })
        source.continuation.yield(AdvertisingReport(address: "AA", rssi: -60, data: hex(BeaconVectors.uidFull)))
        #expect(try await first.value == BeaconMessageType.eddystoneUID)

        let box = WeakSubscription()
        do { box.value = try await manager.subscribe(options: options) }
        #expect(await eventually { box.value == nil })
    }

    final class WeakSubscription: @unchecked Sendable {
        weak var value: Subscription?
    }
}

@Suite(.timeLimit(.minutes(5))) struct ConsentTests {
    @Test("the consent file round-trips in a temporary XDG directory, with change handlers")
    func roundTrip() throws {
        let directory = try temporaryDirectory("xdg").appendingPathComponent("swift-nearby")
        let store = ConsentStore(directory: directory)
        let other = ConsentStore(directory: directory)
        let changes = LockedValue<[Bool]>([])
        store.addChangeHandler { granted in changes.withLock { $0.append(granted) } }
        #expect(!store.isGranted)
        try store.setGranted(true)
        #expect(store.isGranted && other.isGranted)
        #expect(try String(contentsOf: store.fileURL, encoding: .utf8) == "granted\n")
        try store.setGranted(true)  // no change, no call
        #expect(try other.toggle() == false)
        #expect(!ConsentStore(directory: directory).isGranted)
        #expect(changes.withLock { $0 } == [true, false])
    }

    @Test("the default directory is under XDG_CONFIG_HOME or ~/.config")
    func defaultDirectory() {
        let path = ConsentStore.defaultDirectory.path
        #expect(path.hasSuffix("/swift-nearby"))
        if let xdg = ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            #expect(path.hasPrefix(xdg))
        } else {
            #expect(path.hasSuffix(".config/swift-nearby"))
        }
    }

    @Test("without consent and with a denying request handler, publish fails and the consent handler fires")
    func denied() async throws {
        let problems = LockedValue<[NearbyError]>([])
        let manager = MessageManager(
            serviceID: "consent", consent: ConsentStore(directory: try temporaryDirectory("deny")),
            permissionRequest: { .deny }, mediums: { _, _ in throw NearbyError(.mediumUnavailable, "unused") },
            onConsentProblem: { e in problems.withLock { $0.append(e) } })
        #expect(await nearbyErrorCode { _ = try await manager.publish(Message(text: "x")) } == .consentNotGranted)
        #expect(await nearbyErrorCode { _ = try await manager.subscribe() } == .consentNotGranted)
        #expect(problems.withLock { $0.count } == 2)
    }

    @Test("a granting request handler persists consent and the change handler fires")
    func granted() async throws {
        let directory = try temporaryDirectory("grant")
        let changes = LockedValue<[Bool]>([])
        let asked = LockedValue(0)
        let manager = MessageManager(
            serviceID: "consent", consent: ConsentStore(directory: directory),
            permissionRequest: { asked.withLock { $0 += 1 }; return .grant },
            mediums: { _, _ in throw NearbyError(.mediumUnavailable, "no medium in this test") },
            onPermissionChanged: { granted in changes.withLock { $0.append(granted) } })
        _ = await nearbyErrorCode { _ = try await manager.publish(Message(text: "x")) }
        _ = await nearbyErrorCode { _ = try await manager.publish(Message(text: "x")) }
        #expect(ConsentStore(directory: directory).isGranted)
        #expect(asked.withLock { $0 } == 1)
        #expect(changes.withLock { $0 } == [true])
    }
}
