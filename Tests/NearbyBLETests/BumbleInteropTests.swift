import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

import NearbyBLE

/// Our host against Bumble hosts on linked Bumble virtual controllers (bumble==0.0.236). Each test starts its own
/// controllers process and peers, and ends them by PID.
@Suite(
    "BLE against Bumble", .serialized,
    .enabled(if: BLETestEnvironment.bumbleTestsEnabled, "needs <repo>/.venv with bumble (scripts/install-deps.sh)"), .timeLimit(.minutes(5)))
struct BumbleInteropTests {
    static let peerAddress = "C0:00:00:00:00:0A"

    func makeHost(_ controllers: VirtualControllers, _ index: Int, mps: UInt16 = 247, credits: UInt16 = 16) async throws -> BLEHost {
        var configuration = BLEHost.Configuration()
        configuration.channelParameters = CreditChannelParameters(mtu: 4096, mps: mps, credits: credits)
        return try await BLEHost.open(controllers.spec(index), configuration: configuration, logger: BLETestEnvironment.logger("host\(index)"))
    }

    @Test func bumbleScansAndDecodesOurAdvertisement() async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let medium = BLEMedium(configuration: .init(transport: controllers.spec(0)), logger: BLETestEnvironment.logger("adv"))
        let request = AdvertisingRequest(
            serviceID: "com.example.ble", endpointID: "SWFT", endpointInfo: Array("swift".utf8), pcp: .p2pPointToPoint)
        let session = try await medium.startAdvertising(request) { _ in }
        let scanner = try RigProcess.python("peer.py", ["scan", String(controllers.ports[1]), "30"])
        defer { scanner.kill() }
        let words = try await scanner.waitForLine("FEF3")
        let serviceData = try #require(hexDecode(words[1]))
        let mediumAdvertisement = try BleMediumAdvertisement(decoding: serviceData)
        #expect(mediumAdvertisement.isFast)
        let connections = try BleConnectionsAdvertisement(decoding: mediumAdvertisement.data, form: .fast)
        #expect(connections.endpointID.value == "SWFT")
        #expect(connections.endpointInfo == Array("swift".utf8))
        let ourAddress = try await medium.host().address.description
        #expect(words[0] == ourAddress)
        await session.stop()
        await medium.shutdown()
    }

    @Test func bumbleScansOurExtendedRegularAdvertisement() async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let medium = BLEMedium(configuration: .init(transport: controllers.spec(0)), logger: BLETestEnvironment.logger("adv"))
        let info = [UInt8](repeating: 0x42, count: 100)
        let request = AdvertisingRequest(serviceID: "com.example.ble", endpointID: "LONG", endpointInfo: info, pcp: .p2pStar)
        let session = try await medium.startAdvertising(request) { _ in }
        let scanner = try RigProcess.python("peer.py", ["scan", String(controllers.ports[1]), "30"])
        defer { scanner.kill() }
        let words = try await scanner.waitForLine("FEF3")
        let mediumAdvertisement = try BleMediumAdvertisement(decoding: try #require(hexDecode(words[1])))
        #expect(!mediumAdvertisement.isFast)
        #expect(mediumAdvertisement.psm == (session as? BLEAdvertisingSession)?.psm)
        let connections = try BleConnectionsAdvertisement(decoding: mediumAdvertisement.data, form: .regular)
        #expect(connections.endpointID.value == "LONG")
        #expect(connections.endpointInfo == info)
        #expect(connections.pcp == .p2pStar)
        await session.stop()
        await medium.shutdown()
    }

    @Test func weDiscoverABumbleAdvertiser() async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let connections = try BleConnectionsAdvertisement.fast(
            pcp: .p2pPointToPoint, endpointID: EndpointID("BMBL"), endpointInfo: Array("bumble".utf8))
        let advertisement = try BleMediumAdvertisement.fast(data: connections.encodedBytes, deviceToken: [7, 7])
        let data = AdvertisingData.build(serviceUUID: 0xFEF3, serviceData: advertisement.encodedBytes)
        let advertiser = try RigProcess.python(
            "peer.py", ["advertise", String(controllers.ports[0]), Self.peerAddress, hexEncode(data), "4"])
        defer { advertiser.kill() }
        _ = try await advertiser.waitForLine("READY")
        var configuration = BLEMedium.Configuration(transport: controllers.spec(1))
        configuration.lostTimeout = .seconds(2)
        let medium = BLEMedium(configuration: configuration, logger: BLETestEnvironment.logger("scan"))
        var found: DiscoveredEndpoint?
        var lost = false
        let stream = medium.discover(serviceID: "com.example.ble", pcp: .p2pPointToPoint)
        for try await event in stream {
            switch event {
            case .found(let endpoint):
                found = endpoint  // the peer stops advertising after 4 s: then the endpoint must be lost
            case .lost(let id, _):
                #expect(id == "BMBL")
                lost = true
            }
            if lost { break }
        }
        #expect(found?.endpointID == "BMBL")
        #expect(found?.endpointInfo == Array("bumble".utf8))
        #expect(found?.route == .ble(address: Self.peerAddress, psm: nil))
        #expect(lost)
        await medium.shutdown()
    }

    @Test func cocEchoThroughBumbleWithSDUsLargerThanTheMPS() async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        // The Bumble server's MPS is 100: every SDU we send is segmented; ours is 247: its echoes are too.
        let server = try RigProcess.python(
            "peer.py", ["echo", String(controllers.ports[0]), Self.peerAddress, "129", "2048", "100", "32"])
        defer { server.kill() }
        _ = try await server.waitForLine("READY")
        let host = try await makeHost(controllers, 1)
        let handle = try await host.connect(to: BLEAddress(string: Self.peerAddress)!)
        let channel = try await host.openChannel(handle: handle, psm: 129)
        #expect(channel.peerMPS == 100)
        #expect(channel.peerMTU == 2048)
        let total = 200_000
        let sent = patternBytes(total, seed: 42)
        let reader = Task { () throws -> [UInt8] in
            var received: [UInt8] = []
            while received.count < total, let sdu = try await channel.receive() { received += sdu }
            return received
        }
        var offset = 0
        var size = 700
        while offset < total {
            let end = min(total, offset + size)
            try await channel.send(Array(sent[offset..<end]))
            offset = end
            size = size == 700 ? 2048 : 700
        }
        let received = try await reader.value
        #expect(received.count == total)
        #expect(received == sent)
        await channel.close()
        await host.close()
    }

    @Test func writerWaitsForCreditsOfAStalledPeer() async throws {
        let controllers = try await VirtualControllers.start(2)
        defer { controllers.stop() }
        let server = try RigProcess.python(
            "peer.py", ["stall", String(controllers.ports[0]), Self.peerAddress, "129", "512", "100", "4"])
        defer { server.kill() }
        _ = try await server.waitForLine("READY")
        let host = try await makeHost(controllers, 1)
        let handle = try await host.connect(to: BLEAddress(string: Self.peerAddress)!)
        let channel = try await host.openChannel(handle: handle, psm: 129)
        let completed = LockedValue(0)
        // Each 98-byte SDU is one K-frame: 4 credits let 4 through, then the writer must wait.
        let writer = Task {
            for _ in 0..<50 {
                try await channel.send([UInt8](repeating: 1, count: 98))
                completed.withLock { $0 += 1 }
            }
        }
        _ = try await eventually(within: 30, "the peer's credits to run out") {
            await channel.availableCredits() == 0 && completed.withLock { $0 } == 4 ? true : nil
        }
        await channel.close()
        let result = await writer.result
        #expect(throws: NearbyError.self) { try result.get() }
        // The fifth send stayed blocked until the close ended it: nothing more completed while the peer granted
        // nothing (checked without sleeping: whatever had completed by now would be counted).
        #expect(completed.withLock { $0 } == 4)
        await host.close()
    }

    @Test func controllerDropMidTransferFailsClearly() async throws {
        let controllers = try await VirtualControllers.start(2)
        let server = try RigProcess.python(
            "peer.py", ["echo", String(controllers.ports[0]), Self.peerAddress, "129", "2048", "247", "32"])
        defer { server.kill() }
        _ = try await server.waitForLine("READY")
        let host = try await makeHost(controllers, 1)
        let handle = try await host.connect(to: BLEAddress(string: Self.peerAddress)!)
        let channel = try await host.openChannel(handle: handle, psm: 129)
        let sentCount = LockedValue(0)
        let writer = Task {
            while true {
                try await channel.send(patternBytes(1000, seed: 3))
                sentCount.withLock { $0 += 1 }
            }
        }
        let reader = Task { while try await channel.receive() != nil {} }
        _ = try await eventually(within: 30, "some data to flow") { sentCount.withLock { $0 } >= 5 ? true : nil }
        controllers.stop()  // the controller process dies mid-transfer
        let writeResult = await writer.result
        #expect(throws: NearbyError.self) { try writeResult.get() }
        let readResult = await reader.result
        #expect(throws: NearbyError.self) { try readResult.get() }
        let failure = await host.failureReason
        #expect(failure?.code == .mediumUnavailable)
        // The host stays usable as an object: new operations fail fast with the same error.
        await #expect(throws: NearbyError.self) { try await host.execute(HCICommand(.reset)) }
        await host.close()
    }
}

func hexDecode(_ text: String) -> [UInt8]? {
    guard text.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        guard let byte = UInt8(text[index..<next], radix: 16) else { return nil }
        bytes.append(byte)
        index = next
    }
    return bytes
}

func hexEncode(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}
