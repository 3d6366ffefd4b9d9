import Foundation
import NearbyCore
import NearbyWire
import Testing

@testable import NearbyWiFiLAN

/// Wi-Fi LAN as a bandwidth upgrade target: which addresses are offered and how an offered path is reached.
@Suite("Wi-Fi LAN upgrade listener and connector", .timeLimit(.minutes(5)))
struct WiFiLANUpgradeTests {
    @Test("Address literals convert to and from their bytes")
    func addressText() {
        #expect(IPAddressText.parse("10.77.0.1") == [10, 77, 0, 1])
        #expect(IPAddressText.parse("fe80::1%eth0") == [0xFE, 0x80] + Array(repeating: 0, count: 13) + [1])
        #expect(IPAddressText.parse("host.example") == nil)
        #expect(IPAddressText.format([192, 168, 1, 20]) == "192.168.1.20")
        #expect(IPAddressText.format([0x20, 0x01, 0x0D, 0xB8] + Array(repeating: 0, count: 11) + [5]) == "2001:db8::5")
        #expect(IPAddressText.format([1, 2, 3]) == nil)
        #expect(OfflineFrameValidator.isRefusedUpgradeAddress([127, 0, 0, 1]))
        #expect(OfflineFrameValidator.isRefusedUpgradeAddress([169, 254, 3, 4]))
        #expect(OfflineFrameValidator.isRefusedUpgradeAddress(IPAddressText.parse("::1")!))
        #expect(OfflineFrameValidator.isRefusedUpgradeAddress(IPAddressText.parse("fe80::9")!))
        #expect(!OfflineFrameValidator.isRefusedUpgradeAddress([10, 77, 0, 1]))
    }

    @Test("An offered path is tried candidate by candidate (IPv6 first), then its legacy address, without repeats")
    func targets() {
        let v6 = IPAddressText.parse("2001:db8::5")!
        let path = OfflineFrames.wifiLanUpgradePath(addresses: [[10, 0, 0, 7], v6], port: 4242)
        let targets = WiFiLANMedium.upgradeTargets(path.wifiLanSocket)
        #expect(targets.map(\.0) == ["2001:db8::5", "10.0.0.7"])
        #expect(targets.map(\.1) == [4242, 4242])
        var legacyOnly = UpgradePathInfo.WifiLanSocket()
        legacyOnly.ipAddress = Data([10, 0, 0, 8])
        legacyOnly.wifiPort = 99
        #expect(WiFiLANMedium.upgradeTargets(legacyOnly).map { "\($0.0):\($0.1)" } == ["10.0.0.8:99"])
    }

    @Test("A path at a refused address, or with more than 16 candidates, is refused without a connect attempt")
    func refusedPathsAreNotConnected() async throws {
        let accepted = TCPAcceptedChannels()
        let listener = try await TCPListener.bind(host: "127.0.0.1", port: 0, onAccept: accepted.onAccept)
        let port = Int32(listener.port)
        let medium = WiFiLANMedium(listenHost: "0.0.0.0")
        func path(_ addresses: [[UInt8]]) -> UpgradePathInfo {
            var info = OfflineFrames.wifiLanUpgradePath(addresses: [], port: port)
            info.wifiLanSocket.addressCandidates = addresses.map { address in
                var candidate = ProtoServiceAddress()
                candidate.ipAddress = Data(address)
                candidate.port = port
                return candidate
            }
            return info
        }
        let mappedLoopback = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 127, 0, 0, 1]
        var legacyOnly = path([])
        legacyOnly.wifiLanSocket.ipAddress = Data([127, 0, 0, 1])
        legacyOnly.wifiLanSocket.wifiPort = port
        let refused: [UpgradePathInfo] = [
            path([[127, 0, 0, 1]]),
            path([mappedLoopback]),
            path([IPAddressText.parse("::1")!]),
            path([[0, 0, 0, 0]]),
            path([IPAddressText.parse("::")!]),
            path([[10, 77, 0, 1], [127, 0, 0, 1]]),
            legacyOnly,
            // 17 candidates: 16 unreachable ones and then the listener.
            path((1...16).map { [10, 255, 255, UInt8($0)] } + [[127, 0, 0, 1]]),
        ]
        for info in refused {
            let error = await tcpCaughtError { _ = try await medium.connectForUpgrade(to: info) }
            #expect((error as? NearbyError)?.code == .invalidFrame, "\(String(describing: error))")
        }
        // Nothing reached the listener: the first connection it accepts is this probe.
        let probe = try await TCPConnector.connect(hosts: ["127.0.0.1"], port: listener.port)
        try await probe.writeFrame(Array("probe".utf8))
        let first = try await accepted.next()
        #expect(try await first.readFrame() == Array("probe".utf8))
        await probe.close()
        await first.close()
        await listener.stop()
    }

    @Test("A listener on one loopback address has nothing to offer")
    func loopbackOnly() async throws {
        let medium = WiFiLANMedium(listenHost: "127.0.0.1")
        #expect(medium.supportsUpgradeListening)
        await #expect(throws: NearbyError.self) {
            _ = try await medium.startUpgradeListener { channel in Task { await channel.close() } }
        }
    }

    @Test(
        "In the test namespace: the veth addresses are offered, never loopback, and the path connects",
        .enabled(if: ProcessInfo.processInfo.environment["NEARBY_TEST_LAN_ADDRESS"] != nil, "needs scripts/with-test-network.sh"))
    func offerAndConnect() async throws {
        let medium = WiFiLANMedium(listenHost: "0.0.0.0")
        let (accepted, continuation) = AsyncStream<any EndpointChannel>.makeStream()
        let listener = try await medium.startUpgradeListener { continuation.yield($0) }
        let socket = listener.pathInfo.wifiLanSocket
        let offered = socket.addressCandidates.map { Array($0.ipAddress) }
        #expect(offered.contains([10, 77, 0, 1]))
        #expect(offered.contains([10, 77, 0, 2]))
        #expect(!offered.contains { OfflineFrameValidator.isRefusedUpgradeAddress($0) })
        #expect(listener.pathInfo.medium == .wifiLan && listener.pathInfo.supportsClientIntroductionAck)
        // The offer passes the strict receive rules peers apply.
        let frame = OfflineFrames.upgradePathAvailable(listener.pathInfo)
        _ = try OfflineFrameParser.parse(OfflineFrames.serialize(frame))

        let client = try await medium.connectForUpgrade(to: listener.pathInfo)
        var iterator = accepted.makeAsyncIterator()
        let server = try #require(await iterator.next())
        try await client.writeFrame([1, 2, 3])
        #expect(try await server.readFrame() == [1, 2, 3])
        await listener.stop()
        await client.close()
        await server.close()

        // After stop, nothing listens there any more.
        await #expect(throws: NearbyError.self) { _ = try await medium.connectForUpgrade(to: listener.pathInfo) }
    }
}
