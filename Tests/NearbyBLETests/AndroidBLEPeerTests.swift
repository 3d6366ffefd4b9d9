import Foundation
import NearbyBLE
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyWiFiLAN
import Testing

/// Our BLE medium against `Tests/BLE/android_peer.py`, a Bumble host written from the public descriptions of
/// Android's BLE formats (advertisement header and GATT slots, Weave GATT socket, length-framed L2CAP with its
/// command handshake, the socket layer). The peer relays the Nearby stream to a TCP socket, where a second
/// swift-nearby engine plays the Android app on a relayed medium of kind BLE (``RelayedAppMedium``): so UKEY2,
/// payloads and the upgrade to Wi-Fi LAN cross the BLE link in Android's formats only.
@Suite(
    "swift-nearby against an Android-format BLE peer", .serialized, .timeLimit(.minutes(5)),
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"),
    .enabled(if: BLETestEnvironment.inTestNetwork, "needs the private network of scripts/with-test-network.sh"))
struct AndroidBLEPeerTests {
    static let serviceID = "com.example.android.ble"
    static let peerAddress = "C0:00:00:00:00:A1"

    func manager(_ mediums: [any MediumDriver], _ directory: URL, _ name: String) -> (ConnectionManager, EventLog) {
        let options = ConnectionOptions(
            drivers: mediums, receiveDirectory: directory, bandwidthUpgradeDelay: .seconds(1),
            logger: BLETestEnvironment.logger(name))
        let manager = ConnectionManager(serviceID: Self.serviceID, strategy: .pointToPoint, options: options)
        return (manager, EventLog(manager.events))
    }

    func scratchDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-android-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// `sender` sends bytes and a file of `fileSize` bytes (1 MB by default) that `receiver` checks, and bytes come
    /// back.
    func exchange(
        _ sender: ConnectionManager, _ senderLog: EventLog, to senderPeer: EndpointID,
        _ receiver: ConnectionManager, _ receiverLog: EventLog, receiverPeer: EndpointID, scratch: URL,
        fileSize: Int = 1_000_000
    ) async throws {
        let bytes = Data(patternBytes(2000, seed: 3))
        _ = try await sender.send(bytes, to: senderPeer)
        #expect(try await receiverLog.wait("bytes") { event -> Data? in
            if case .bytesReceived(_, _, let data) = event { return data }
            return nil
        } == bytes)
        let contents = Data(patternBytes(fileSize, seed: 4))
        let source = scratch.appendingPathComponent("source.bin")
        try contents.write(to: source)
        _ = try await sender.sendResource(at: source, withName: "payload.bin", to: senderPeer)
        let url = try await receiverLog.wait("the file", 240) { event -> URL? in
            if case .fileReceived(_, _, let url, "payload.bin") = event { return url }
            return nil
        }
        #expect(try Data(contentsOf: url) == contents)
        _ = try await receiver.send(Data("back".utf8), to: receiverPeer)
        #expect(try await senderLog.wait("bytes back") { event -> Data? in
            if case .bytesReceived(_, _, let data) = event { return data }
            return nil
        } == Data("back".utf8))
    }

    /// The Android peer advertises (`form`) and serves; our BLE medium discovers it and connects over the path its
    /// advertisement implies; the peer relays to a Wi-Fi LAN advertiser of ours playing the app.
    func androidAdvertises(form: String, l2cap: Bool, fileSize: Int = 1_000_000) async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let scratch = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let relay = RelayedAppMedium(logger: BLETestEnvironment.logger("app-relay"))
        // The app advertises, so it offers the upgrade: only once the exchange over BLE is done.
        let gate = GatedUpgradeLAN()
        defer { gate.open() }
        let (app, appLog) = manager([relay, gate], scratch, "app")
        let appAdvertiser = Advertiser(connectionManager: app)
        let sessions = try await appAdvertiser.startAdvertising(using: Data("app".utf8), mediums: [.ble])
        let bridgePort = try #require(sessions.first?.port)

        let info = Data("Pixel".utf8)
        var arguments = [
            "server", String(controllers.ports[0]), Self.peerAddress, Self.serviceID, "ANDR",
            info.map { String(format: "%02x", $0) }.joined(), String(bridgePort), form,
        ]
        if l2cap { arguments.append("l2cap") }
        let peer = try RigProcess.python("android_peer.py", arguments)
        defer { peer.kill() }
        do {
            _ = try await peer.waitForLine("READY")
            let ble = BLEMedium(configuration: .init(transport: controllers.spec(1)), logger: BLETestEnvironment.logger("ours"))
            let (ours, ourLog) = manager([ble, WiFiLANMedium(logger: BLETestEnvironment.logger("ours-lan"))], scratch, "ours")
            let discoverer = Discoverer(connectionManager: ours)
            try await discoverer.startDiscovery(mediums: [.ble])
            let found = try await ourLog.wait("the Android endpoint") { event -> EndpointID? in
                if case .endpointFound(let id, let context, .ble) = event, context == info { return id }
                return nil
            }
            #expect(found == "ANDR")
            try await discoverer.requestConnection(to: found, using: Data("linux".utf8))
            let socket = try await peer.waitForLine("SOCKET")
            #expect(socket == [l2cap ? "l2cap" : "gatt"])
            let appPeer = try await appLog.wait("the request at the app") { event -> EndpointID? in
                if case .connectionRequested(let id, let context, _, _) = event, context == Data("linux".utf8) { return id }
                return nil
            }
            try await app.accept(appPeer)
            try await ours.accept(found)
            _ = try await ourLog.wait("connected") { event -> Bool? in
                if case .stateChanged(found, .connected, _) = event { return true }
                return nil
            }
            try await exchange(ours, ourLog, to: found, app, appLog, receiverPeer: appPeer, scratch: scratch, fileSize: fileSize)
            expectStillOnBLE(ourLog, appLog)
            gate.open()
            try await upgraded(ours, ourLog, found, app, appLog, appPeer)
            await ours.disconnect(from: found)
            await discoverer.stopDiscoveryAndWait()
            await ours.shutdown()
            await ble.shutdown()
        } catch {
            Issue.record("android_peer.py said:\n\(peer.output.suffix(2000))")
            throw error
        }
        await appAdvertiser.stopAdvertisingAndWait()
        await app.shutdown()
    }

    /// Nothing moved yet: the upgrade offer waits at the gate, so the exchange went over BLE.
    func expectStillOnBLE(_ logs: EventLog...) {
        for log in logs {
            #expect(!log.all.contains { if case .mediumChanged = $0 { true } else { false } }, "moved before the BLE exchange ended")
        }
    }

    /// The app's side (the advertiser on BLE when Android advertises, ours otherwise) offers Wi-Fi LAN; both sides
    /// move, and bytes flow over it.
    func upgraded(
        _ ours: ConnectionManager, _ ourLog: EventLog, _ ourPeer: EndpointID,
        _ app: ConnectionManager, _ appLog: EventLog, _ appPeer: EndpointID
    ) async throws {
        for log in [ourLog, appLog] {
            _ = try await log.wait("the move to Wi-Fi LAN", 90) { event -> Bool? in
                if case .mediumChanged(_, .wifiLAN) = event { return true }
                return nil
            }
        }
        _ = try await app.send(Data("after the upgrade".utf8), to: appPeer)
        #expect(try await ourLog.wait("bytes over Wi-Fi LAN") { event -> Data? in
            if case .bytesReceived(_, _, let data) = event, data == Data("after the upgrade".utf8) { return data }
            return nil
        } == Data("after the upgrade".utf8))
    }

    /// Our BLE medium advertises (fast form, or the regular one with a PSM) and serves; the Android peer connects
    /// over `path` and relays to a Wi-Fi LAN discoverer of ours playing the app. The connection then moves to
    /// Wi-Fi LAN (our advertiser offers it; the app's request listed Wi-Fi LAN).
    func androidConnects(path: String, header: Bool = false, fileSize: Int = 1_000_000) async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let scratch = try scratchDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        var configuration = BLEMedium.Configuration(transport: controllers.spec(0))
        configuration.alwaysUseExtendedAdvertising = path == "l2cap" || header
        configuration.alwaysUseGATTAdvertisement = header
        let ble = BLEMedium(configuration: configuration, logger: BLETestEnvironment.logger("ours"))
        // We advertise, so we offer the upgrade: only once the exchange over BLE is done.
        let gate = GatedUpgradeLAN()
        defer { gate.open() }
        let (ours, ourLog) = manager([ble, gate], scratch, "ours")
        let advertiser = Advertiser(connectionManager: ours)
        _ = try await advertiser.startAdvertising(using: Data("linux".utf8), mediums: [.ble])

        let peer = try RigProcess.python(
            "android_peer.py", ["client", String(controllers.ports[1]), Self.peerAddress, Self.serviceID, path])
        defer { peer.kill() }
        do {
            let bridgePort = try #require(Int(try await peer.waitForLine("READY").first ?? ""))
            let relay = RelayedAppMedium(logger: BLETestEnvironment.logger("app-relay"))
            relay.target.withLock { $0 = ("RLAY", Array("relay".utf8), bridgePort) }
            let (app, appLog) = manager([relay, WiFiLANMedium(logger: BLETestEnvironment.logger("app-lan"))], scratch, "app")
            let discoverer = Discoverer(connectionManager: app)
            try await discoverer.startDiscovery(mediums: [.ble])
            let relayed = try await appLog.wait("the relay") { event -> EndpointID? in
                if case .endpointFound(let id, _, .ble) = event { return id }
                return nil
            }
            try await discoverer.requestConnection(to: relayed, using: Data("app".utf8))
            let socket = try await peer.waitForLine("SOCKET", within: 90)
            #expect(socket == [path])
            let ourPeer = try await ourLog.wait("the request at our advertiser") { event -> EndpointID? in
                if case .connectionRequested(let id, let context, _, _) = event, context == Data("app".utf8) { return id }
                return nil
            }
            try await ours.accept(ourPeer)
            try await app.accept(relayed)
            _ = try await ourLog.wait("connected") { event -> Bool? in
                if case .stateChanged(ourPeer, .connected, _) = event { return true }
                return nil
            }
            try await exchange(ours, ourLog, to: ourPeer, app, appLog, receiverPeer: relayed, scratch: scratch, fileSize: fileSize)
            expectStillOnBLE(ourLog, appLog)
            gate.open()
            try await upgraded(ours, ourLog, ourPeer, app, appLog, relayed)
            await app.disconnect(from: relayed)
            await discoverer.stopDiscoveryAndWait()
            await app.shutdown()
        } catch {
            Issue.record("android_peer.py said:\n\(peer.output.suffix(2000))")
            throw error
        }
        await advertiser.stopAdvertisingAndWait()
        await ours.shutdown()
        await ble.shutdown()
    }

    @Test("Android advertises fast; we connect over its Weave GATT socket; the connection moves to Wi-Fi LAN")
    func weaveClient() async throws { try await androidAdvertises(form: "fast", l2cap: false) }

    @Test("Android advertises the regular form with a PSM; we connect over framed L2CAP; the connection moves to Wi-Fi LAN")
    func l2capClient() async throws { try await androidAdvertises(form: "extended", l2cap: true) }

    @Test("Android connects to our Weave GATT socket; the connection moves to Wi-Fi LAN")
    func weaveServer() async throws { try await androidConnects(path: "gatt") }

    @Test("Android connects to our framed L2CAP channel; the connection moves to Wi-Fi LAN")
    func l2capServer() async throws { try await androidConnects(path: "l2cap") }

    @Test("Android advertises a header with GATT slots; we read slot 0 and connect over Weave")
    func headerWeaveClient() async throws { try await androidAdvertises(form: "header", l2cap: false, fileSize: 100_000) }

    @Test("Android advertises a header with a PSM; we read slot 0 and connect over framed L2CAP")
    func headerL2CAPClient() async throws { try await androidAdvertises(form: "header", l2cap: true, fileSize: 100_000) }

    @Test("We advertise a header and GATT slots; Android reads slot 0 and connects over framed L2CAP")
    func headerServer() async throws { try await androidConnects(path: "l2cap", header: true, fileSize: 100_000) }
}
