import Foundation
import NearbyBLE
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import Testing
import enum NearbyWire.PCP

/// A stranger's L2CAP channels to a BLE advertiser's PSM that never carry a Nearby connection request (closed at
/// once, garbage, idle until the advertiser drops them, cut off with the link) must not make the advertiser
/// unreachable: a real discoverer still connects afterwards. The stranger finds the advertiser like any
/// discoverer, then drives its own ``BLEHost`` (on its own virtual controller) directly.
@Suite(
    "A stranger's channels to a BLE advertiser", .serialized, .timeLimit(.minutes(3)),
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"))
struct BLEStrangerChannelTests {
    /// The advertiser (controller 0), its medium and its PSM, plus a stranger host connected to it (controller 1).
    struct Rig {
        let controllers: VirtualControllers
        let scratch: URL
        let advertiser: ConnectionManager
        /// Kept alive: advertising lasts as long as this object.
        let advertising: Advertiser
        let advertiserLog: EventLog
        let advertiserAddress: BLEAddress
        let psm: UInt16
        let strangerMedium: BLEMedium
        let stranger: BLEHost
        let link: UInt16
    }

    func manager(_ controllers: VirtualControllers, _ index: Int, _ scratch: URL) -> (ConnectionManager, EventLog, BLEMedium) {
        let logger = BLETestEnvironment.logger("peer\(index)")
        let medium = BLEMedium(configuration: .init(transport: controllers.spec(index)), logger: logger)
        let options = ConnectionOptions(drivers: [medium], receiveDirectory: scratch, logger: logger)
        let manager = ConnectionManager(serviceID: "com.example.ble.stranger", strategy: .pointToPoint, options: options)
        return (manager, EventLog(manager.events), medium)
    }

    func makeRig() async throws -> Rig {
        let controllers = try await VirtualControllers.start(3)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-ble-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        let (advertiser, log, _) = manager(controllers, 0, scratch)
        let advertising = Advertiser(connectionManager: advertiser)
        _ = try await advertising.startAdvertising(using: Data("adv".utf8), mediums: [.ble])
        // A short endpoint info gives the fast advertisement, whose channel server listens on the fixed PSM.
        let psm = BLEMedium.Configuration(transport: controllers.spec(0)).fastAdvertisementPSM
        let strangerMedium = BLEMedium(
            configuration: .init(transport: controllers.spec(1)), logger: BLETestEnvironment.logger("stranger"))
        var found: BLEAddress?
        for try await event in strangerMedium.discover(serviceID: "com.example.ble.stranger", pcp: .p2pPointToPoint) {
            if case .found(let endpoint) = event, case .ble(let text, _) = endpoint.route {
                found = BLEAddress(string: text)
                break
            }
        }
        let address = try #require(found)
        let stranger = try await strangerMedium.host()
        let link = try await stranger.connect(to: address)
        return Rig(
            controllers: controllers, scratch: scratch, advertiser: advertiser, advertising: advertising, advertiserLog: log,
            advertiserAddress: address, psm: psm, strangerMedium: strangerMedium, stranger: stranger, link: link)
    }

    /// Waits until the advertiser ends `channel` (the stranger's reader sees the end or an error).
    func waitUntilDropped(_ channel: L2CAPChannel) async throws {
        let ended = LockedValue(false)
        let reader = Task {
            while (try? await channel.receive()) != nil {}
            ended.withLock { $0 = true }
        }
        defer { reader.cancel() }
        _ = try await eventually(within: 30, "the advertiser to drop channel \(channel.localCID)") {
            ended.withLock { $0 } ? true : nil
        }
    }

    /// The stranger leaves; a real discoverer on controller 2 finds the advertiser and its connection request
    /// arrives (the advertiser's controller gives its link the stranger's old handle, and our host as central
    /// asks for CID 0x0040 again).
    func realDiscovererGetsThrough(_ rig: Rig) async throws {
        await rig.stranger.disconnect(handle: rig.link)
        await rig.strangerMedium.shutdown()
        let (discoverer, log, _) = manager(rig.controllers, 2, rig.scratch)
        let discovery = Discoverer(connectionManager: discoverer)
        try await discovery.startDiscovery(mediums: [.ble])
        let wanted = rig.advertiser.localEndpointID
        let found = try await log.wait("discovery of \(wanted)") { event -> EndpointID? in
            if case .endpointFound(let id, _, _) = event, id == wanted { return id }
            return nil
        }
        try await discovery.requestConnection(to: found, using: Data("real".utf8))
        let context = try await rig.advertiserLog.wait("the real discoverer's request") { event -> Data? in
            if case .connectionRequested(_, let context, _, true) = event { return context }
            return nil
        }
        #expect(context == Data("real".utf8))
        _ = try await log.wait("the request at the discoverer") { event -> Bool? in
            if case .connectionRequested(found, _, _, false) = event { return true }
            return nil
        }
        await discoverer.shutdown()
    }

    @Test func closedGarbageIdleAndCutOffChannelsDoNotLockOutARealDiscoverer() async throws {
        let rig = try await makeRig()
        defer {
            rig.controllers.stop()
            try? FileManager.default.removeItem(at: rig.scratch)
        }
        // Closed at once, three times on one link: the stranger asks from CID 0x0040 each time.
        for _ in 0..<3 {
            let channel = try await rig.stranger.openChannel(handle: rig.link, psm: rig.psm)
            await channel.close(disconnectLink: false)
        }
        // Garbage: a length prefix far beyond any frame; the advertiser drops only this channel.
        let garbage = try await rig.stranger.openChannel(handle: rig.link, psm: rig.psm)
        try await garbage.send([0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3])
        try await waitUntilDropped(garbage)
        await garbage.close(disconnectLink: false)
        // Idle: no connection request, so the advertiser drops it after its connection-request timeout.
        let idle = try await rig.stranger.openChannel(handle: rig.link, psm: rig.psm)
        try await waitUntilDropped(idle)
        await idle.close(disconnectLink: false)
        // Cut off: two channels, then the link goes while the advertiser still waits for their requests.
        _ = try await rig.stranger.openChannel(handle: rig.link, psm: rig.psm)
        _ = try await rig.stranger.openChannel(handle: rig.link, psm: rig.psm)
        try await realDiscovererGetsThrough(rig)
        await rig.advertiser.shutdown()
    }

    /// Every dynamic CID of one LE link (0x0040–0x007F, 64 channels) held idle at once: the advertiser accepts
    /// them all, drops them all after its connection-request timeout, and then serves the same link and a real
    /// discoverer again.
    @Test func aFullTableOfIdleChannelsIsDroppedAndTheServerKeepsServing() async throws {
        let rig = try await makeRig()
        defer {
            rig.controllers.stop()
            try? FileManager.default.removeItem(at: rig.scratch)
        }
        var channels: [L2CAPChannel] = []
        for _ in 0..<64 { channels.append(try await rig.stranger.openChannel(handle: rig.link, psm: rig.psm)) }
        await #expect(throws: NearbyError.self) { try await rig.stranger.openChannel(handle: rig.link, psm: rig.psm) }
        for channel in channels {
            try await waitUntilDropped(channel)
            await channel.close(disconnectLink: false)
        }
        let again = try await rig.stranger.openChannel(handle: rig.link, psm: rig.psm)
        await again.close(disconnectLink: false)
        try await realDiscovererGetsThrough(rig)
        await rig.advertiser.shutdown()
    }
}
