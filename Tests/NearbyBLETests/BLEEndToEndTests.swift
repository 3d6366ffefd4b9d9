import Foundation
import NearbyBLE
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyWiFiLAN
import enum NearbyWire.PCP
import Testing

/// Every event a manager reported.
final class EventLog: Sendable {
    private final class Storage: Sendable {
        let events = LockedValue<[ConnectionEvent]>([])
    }

    private let storage = Storage()
    private let task = LockedValue<Task<Void, Never>?>(nil)

    init(_ stream: AsyncStream<ConnectionEvent>) {
        let storage = self.storage
        let consumer = Task {
            for await event in stream { storage.events.withLock { $0.append(event) } }
        }
        task.withLock { $0 = consumer }
    }

    var all: [ConnectionEvent] { storage.events.withLock { $0 } }

    func wait<Value>(_ what: String, _ seconds: Double = 60, _ match: @escaping (ConnectionEvent) -> Value?) async throws -> Value {
        do {
            return try await eventually(within: seconds, what) { all.compactMap(match).first }
        } catch {
            throw RigFailure("\(error); events: \(all.suffix(10).map { String("\($0)".prefix(200)) })")
        }
    }

    deinit { task.withLock { $0?.cancel() } }
}

/// Two of our stacks on two linked virtual controllers: discovery over BLE, a connection over an L2CAP CoC, the
/// full lifecycle (UKEY2, encryption, payloads) through ``ConnectionManager``.
@Suite(
    "Two swift-nearby stacks over BLE", .serialized,
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"), .timeLimit(.minutes(5)))
struct BLEEndToEndTests {
    func manager(
        _ controllers: VirtualControllers, _ index: Int, directory: URL, wifiLAN: Bool = false,
        lan: (any MediumDriver)? = nil, gatt: Bool = true
    ) throws -> (ConnectionManager, EventLog, BLEMedium) {
        let logger = BLETestEnvironment.logger("peer\(index)")
        let configuration = BLEMedium.Configuration(transport: controllers.spec(index))
        let medium = gatt
            ? BLEMedium(configuration: configuration, logger: logger)
            : BLEMedium(
                radio: GATTlessRadio(UserSpaceHostRadio(transport: controllers.spec(index), logger: logger)),
                configuration: configuration, logger: logger)
        var mediums: [any MediumDriver] = [medium]
        if let lan { mediums.append(lan) } else if wifiLAN { mediums.append(WiFiLANMedium(logger: logger)) }
        // The advertiser waits before offering the upgrade, so a transfer is moving over BLE when it happens.
        let options = ConnectionOptions(
            drivers: mediums, receiveDirectory: directory, bandwidthUpgradeDelay: .seconds(2), logger: logger)
        let manager = ConnectionManager(serviceID: "com.example.ble.e2e", strategy: .pointToPoint, options: options)
        return (manager, EventLog(manager.events), medium)
    }

    /// Discovery and a connection over BLE, bytes, then a file from the advertiser. With `upgrade`, both sides
    /// also have Wi-Fi LAN (advertising and discovery stay on BLE): a stream from the discoverer is started while
    /// the connection is still on BLE, the connection moves to Wi-Fi LAN under it, and a 20 MB file follows.
    func run(advertiserName: String, upgrade: Bool = false, advertiserGATT: Bool = true, discovererGATT: Bool = true) async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-ble-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let upgradeGate = upgrade ? GatedUpgradeLAN() : nil
        let (a, aLog, aMedium) = try manager(
            controllers, 0, directory: scratch, wifiLAN: upgrade, lan: upgradeGate, gatt: advertiserGATT)
        let (b, bLog, bMedium) = try manager(controllers, 1, directory: scratch, wifiLAN: upgrade, gatt: discovererGATT)
        defer { upgradeGate?.open() }
        let advertiser = Advertiser(connectionManager: a)
        let sessions = try await advertiser.startAdvertising(using: Data(advertiserName.utf8), mediums: [.ble])
        #expect(sessions.count == 1)
        #expect(sessions.first?.medium == .ble)
        let discoverer = Discoverer(connectionManager: b)
        try await discoverer.startDiscovery(mediums: [.ble])
        let wanted = a.localEndpointID
        let found = try await bLog.wait("discovery of \(wanted)") { event -> EndpointID? in
            if case .endpointFound(let id, let context, let medium) = event, id == wanted {
                #expect(medium == .ble)
                #expect(context == Data(advertiserName.utf8))
                return id
            }
            return nil
        }
        try await discoverer.requestConnection(to: found, using: Data("discoverer".utf8))
        let (aPeer, aCode) = try await aLog.wait("request at the advertiser") { event -> (EndpointID, VerificationCode)? in
            if case .connectionRequested(let id, _, let code, _) = event { return (id, code) }
            return nil
        }
        let bCode = try await bLog.wait("request at the discoverer") { event -> VerificationCode? in
            if case .connectionRequested(_, _, let code, _) = event { return code }
            return nil
        }
        #expect(aCode == bCode)
        try await a.accept(aPeer)
        try await b.accept(found)
        _ = try await bLog.wait("connected") { event -> Bool? in
            if case .stateChanged(found, .connected, _) = event { return true }
            return nil
        }
        _ = try await aLog.wait("connected") { event -> Bool? in
            if case .stateChanged(aPeer, .connected, _) = event { return true }
            return nil
        }

        var inFlight: (id: PayloadID, contents: Data, received: Task<[UInt8], any Error>)?
        if upgrade, let upgradeGate {
            // A stream the test feeds: its first quarter goes over BLE, the advertiser offers the upgrade only once
            // the discoverer has sent some of it (the gate on its upgrade listener), and the rest is produced only
            // after both sides moved to Wi-Fi LAN. So part of it provably crosses each medium, however busy the
            // machine (a file could go entirely over BLE before, or entirely after, the upgrade).
            let contents = patternBytes(1_000_000, seed: 11)
            let feed = HeldStreamFeed(contents, heldAfter: 250_000)
            let id = try await b.sendStream(to: found, next: feed.next)
            let stream = try await aLog.wait("the stream at the advertiser") { event -> IncomingByteStream? in
                if case .streamReceived(_, id, let stream) = event { return stream }
                return nil
            }
            let received = Task {
                var bytes: [UInt8] = []
                for try await chunk in stream { bytes += chunk }
                return bytes
            }
            _ = try await bLog.wait("the first bytes of the stream sent over BLE") { event -> Bool? in
                if case .transferUpdate(_, id, .progress, _, true, let bytes, _) = event, bytes > 0 { return true }
                return nil
            }
            upgradeGate.open()
            for log in [aLog, bLog] {
                _ = try await log.wait("the move to Wi-Fi LAN", 60) { event -> Bool? in
                    if case .mediumChanged(_, .wifiLAN) = event { return true }
                    return nil
                }
            }
            feed.release()
            inFlight = (id, Data(contents), received)
            // Part of the stream went over BLE before the move, and not all of it.
            let events = bLog.all
            let moved = try #require(events.firstIndex { if case .mediumChanged = $0 { true } else { false } })
            let sentBefore = events[..<moved].compactMap { event -> Int64? in
                if case .transferUpdate(_, id, .progress, _, true, let bytes, _) = event { return bytes }
                return nil
            }.max() ?? 0
            #expect(sentBefore > 0 && sentBefore <= 250_000)
        }

        let bytes = Data(patternBytes(3000, seed: 9))
        _ = try await b.send(bytes, to: found)
        let received = try await aLog.wait("bytes") { event -> Data? in
            if case .bytesReceived(_, _, let data) = event { return data }
            return nil
        }
        #expect(received == bytes)

        let fileContents = Data(patternBytes(upgrade ? 20_000_000 : 1_000_000, seed: 10))
        let source = scratch.appendingPathComponent("source.bin")
        try fileContents.write(to: source)
        let fileName = upgrade ? "twenty-megabytes.bin" : "one-megabyte.bin"
        _ = try await a.sendResource(at: source, withName: fileName, to: aPeer)
        let url = try await bLog.wait("the file", 240) { event -> URL? in
            if case .fileReceived(_, _, let url, let name) = event, name == fileName { return url }
            return nil
        }
        #expect(try Data(contentsOf: url) == fileContents)

        if let inFlight {
            let received = try await withTestTimeout(120, "the stream sent across the upgrade") {
                try await inFlight.received.value
            }
            #expect(Data(received) == inFlight.contents)
            let outcome = try await bLog.wait("the sender's outcome") { event -> TransferUpdate? in
                guard case .transferUpdate(_, inFlight.id, let update, _, true, _, _) = event else { return nil }
                if case .progress = update { return nil }
                return update
            }
            #expect(outcome == .success)
        }

        await b.disconnect(from: found)
        _ = try await aLog.wait("disconnected") { event -> Bool? in
            if case .stateChanged(aPeer, .disconnected, _) = event { return true }
            return nil
        }
        await discoverer.stopDiscoveryAndWait()
        await advertiser.stopAdvertisingAndWait()
        await a.shutdown()
        await b.shutdown()
        await aMedium.shutdown()
        await bMedium.shutdown()
    }

    @Test func fastAdvertisementConnectionBytesAndOneMegabyteFile() async throws {
        try await run(advertiserName: "short")
    }

    /// A fast advertisement carries no PSM, so the discoverer asks for a Weave GATT socket first. An advertiser whose
    /// radio serves no GATT (as BlueZ-backed ones do for now) has none: the discoverer falls back to L2CAP on the
    /// PSM a fast advertisement implies.
    @Test func advertiserWithoutGATTIsReachedOverL2CAP() async throws {
        try await run(advertiserName: "no gatt", advertiserGATT: false)
    }

    /// A discoverer whose radio cannot be a GATT client connects to a fast advertisement over L2CAP on its implied
    /// PSM.
    @Test func discovererWithoutGATTConnectsOverL2CAP() async throws {
        try await run(advertiserName: "no gatt", discovererGATT: false)
    }

    @Test func extendedAdvertisementWithPSMConnects() async throws {
        try await run(advertiserName: String(repeating: "long endpoint info ", count: 3))
    }

    @Test(
        "An upgrade whose TCP connection is refused leaves the connection working over BLE",
        .enabled(if: BLETestEnvironment.inTestNetwork, "needs the veth addresses of scripts/with-test-network.sh"))
    func refusedUpgradeStaysOnBLE() async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-ble-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let refusing = RefusingUpgradeLAN()
        let (a, aLog, aMedium) = try manager(controllers, 0, directory: scratch, wifiLAN: true)
        let (b, bLog, bMedium) = try manager(controllers, 1, directory: scratch, lan: refusing)
        let advertiser = Advertiser(connectionManager: a)
        _ = try await advertiser.startAdvertising(using: Data("refused".utf8), mediums: [.ble])
        let discoverer = Discoverer(connectionManager: b)
        try await discoverer.startDiscovery(mediums: [.ble])
        let found = try await bLog.wait("discovery") { event -> EndpointID? in
            if case .endpointFound(let id, _, .ble) = event { return id }
            return nil
        }
        try await discoverer.requestConnection(to: found, using: Data("discoverer".utf8))
        let aPeer = try await aLog.wait("request at the advertiser") { event -> EndpointID? in
            if case .connectionRequested(let id, _, _, _) = event { return id }
            return nil
        }
        try await a.accept(aPeer)
        try await b.accept(found)
        // The offer comes 2 s after connecting; the discoverer's TCP connection to it is refused.
        _ = try await eventually(within: 30, "the refused upgrade attempt") { refusing.refusals.withLock { $0 } >= 1 ? true : nil }

        _ = try await a.send(Data("over BLE still".utf8), to: aPeer)
        _ = try await b.send(Data("here too".utf8), to: found)
        #expect(try await bLog.wait("bytes at the discoverer") { event -> Data? in
            if case .bytesReceived(_, _, let data) = event { return data }
            return nil
        } == Data("over BLE still".utf8))
        #expect(try await aLog.wait("bytes at the advertiser") { event -> Data? in
            if case .bytesReceived(_, _, let data) = event { return data }
            return nil
        } == Data("here too".utf8))
        for log in [aLog, bLog] {
            #expect(!log.all.contains { if case .mediumChanged = $0 { true } else { false } })
        }
        await b.disconnect(from: found)
        await discoverer.stopDiscoveryAndWait()
        await advertiser.stopAdvertisingAndWait()
        await a.shutdown()
        await b.shutdown()
        await aMedium.shutdown()
        await bMedium.shutdown()
    }

    @Test(
        "BLE connection upgraded to Wi-Fi LAN under a transfer, then a 20 MB file",
        .enabled(if: BLETestEnvironment.inTestNetwork, "needs the veth addresses of scripts/with-test-network.sh"))
    func upgradesToWiFiLAN() async throws {
        try await run(advertiserName: "upgrade", upgrade: true)
    }
}

/// Wi-Fi LAN whose upgrade connections go to port 1 of the offered addresses, where nothing listens: the kernel
/// refuses them, a real TCP failure.
final class RefusingUpgradeLAN: MediumDriver {
    let lan = WiFiLANMedium(logger: BLETestEnvironment.logger("refusing-lan"))
    let refusals = LockedValue(0)
    var kind: MediumKind { .wifiLAN }
    var supportsUpgradeListening: Bool { true }

    func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        try await lan.startAdvertising(request, onIncoming: onIncoming)
    }

    func discover(serviceID: String, pcp: NearbyWire.PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        lan.discover(serviceID: serviceID, pcp: pcp)
    }

    func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        try await lan.connect(to: route)
    }

    func startUpgradeListener(
        onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any UpgradeListener {
        try await lan.startUpgradeListener(onIncoming: onIncoming)
    }

    func connectForUpgrade(to path: UpgradePathInfo) async throws -> any EndpointChannel {
        var wrong = path
        wrong.wifiLanSocket.wifiPort = 1
        for index in wrong.wifiLanSocket.addressCandidates.indices { wrong.wifiLanSocket.addressCandidates[index].port = 1 }
        do {
            return try await lan.connectForUpgrade(to: wrong)
        } catch {
            refusals.withLock { $0 += 1 }
            throw error
        }
    }
}

/// Wi-Fi LAN whose upgrade listener (so the advertiser's upgrade offer) waits until the test opens the gate.
final class GatedUpgradeLAN: MediumDriver {
    let lan = WiFiLANMedium(logger: BLETestEnvironment.logger("gated-lan"))
    private let isOpen = LockedValue(false)
    var kind: MediumKind { .wifiLAN }
    var supportsUpgradeListening: Bool { true }

    /// Lets the upgrade listener start.
    func open() { isOpen.withLock { $0 = true } }

    func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        try await lan.startAdvertising(request, onIncoming: onIncoming)
    }

    func discover(serviceID: String, pcp: NearbyWire.PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        lan.discover(serviceID: serviceID, pcp: pcp)
    }

    func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        try await lan.connect(to: route)
    }

    func startUpgradeListener(
        onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any UpgradeListener {
        _ = try await eventually(within: 120, "the test to let the upgrade start") { isOpen.withLock { $0 } ? true : nil }
        return try await lan.startUpgradeListener(onIncoming: onIncoming)
    }

    func connectForUpgrade(to path: UpgradePathInfo) async throws -> any EndpointChannel {
        try await lan.connectForUpgrade(to: path)
    }
}

/// The producer of an outgoing stream: `contents` in 16 KiB pieces, holding after `heldAfter` bytes until
/// ``release()``.
final class HeldStreamFeed: Sendable {
    private let contents: [UInt8]
    private let heldAfter: Int
    private let offset = LockedValue(0)
    private let released = LockedValue(false)

    init(_ contents: [UInt8], heldAfter: Int) {
        self.contents = contents
        self.heldAfter = heldAfter
    }

    /// Lets the rest of the stream go.
    func release() { released.withLock { $0 = true } }

    /// The stream's `next`: the next piece, `nil` at the end.
    @Sendable func next() async throws -> [UInt8]? {
        let start = offset.withLock { $0 }
        if start >= heldAfter {
            _ = try await eventually(within: 120, "the test to release the stream") { released.withLock { $0 } ? true : nil }
        }
        guard start < contents.count else { return nil }
        let end = min(start + 16_384, start < heldAfter ? heldAfter : contents.count)
        offset.withLock { $0 = end }
        return Array(contents[start..<end])
    }
}

/// A radio that forwards everything but GATT to a user-space host, like a radio without GATT support (BlueZ for now):
/// `publishGATT` and `connectGATT` throw `.mediumUnavailable` (the protocol's defaults).
final class GATTlessRadio: BLERadio {
    let base: UserSpaceHostRadio
    init(_ base: UserSpaceHostRadio) { self.base = base }
    var description: String { "GATT-less \(base)" }
    func open() async throws { try await base.open() }
    func supportsExtendedAdvertising() async throws -> Bool { try await base.supportsExtendedAdvertising() }
    func startAdvertising(_ advertisement: BLEAdvertisement) async throws -> BLERadioHandle {
        try await base.startAdvertising(advertisement)
    }
    func scan(preset: ScanPreset) -> AsyncThrowingStream<AdvertisingReport, any Error> { base.scan(preset: preset) }
    func listen(
        psm: UInt16?, onChannel: @escaping @Sendable (any L2CAPSDUChannel) -> Void
    ) async throws -> BLEL2CAPServer {
        try await base.listen(psm: psm, onChannel: onChannel)
    }
    func connect(to address: BLEAddress, psm: UInt16) async throws -> any L2CAPSDUChannel {
        try await base.connect(to: address, psm: psm)
    }
    func states() -> AsyncStream<BLERadioState> { base.states() }
    func shutdown() async { await base.shutdown() }
}
