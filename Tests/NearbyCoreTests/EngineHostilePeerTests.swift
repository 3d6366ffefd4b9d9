import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

/// An engine connected to a peer the test scripts frame by frame: upgrade offers the engine must refuse without
/// connecting, and plaintext keep-alives outside the tolerance window around the switch to encryption.
@Suite("Engine against a scripted peer", .timeLimit(.minutes(5)))
struct EngineHostilePeerTests {
    /// Connects `engine` and a scripted peer; the engine decides second, so it turns encryption on before the
    /// peer has read its response (the window in which the reference tolerates plaintext keep-alives).
    static func connected(_ lone: LoneEngine) async throws -> ScriptedPeer {
        let peer = try await ScriptedPeer.connect(lone.engine, on: lone.air)
        await peer.accept()
        try await lone.engine.acceptConnection(ScriptedPeer.endpointID)
        _ = try await lone.log.wait { if case .endpoint(.connected) = $0 { true } else { false } }
        return peer
    }

    static let mappedLoopback = [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 127, 0, 0, 1]

    static let refusedPaths: [(String, UpgradePathInfo)] = [
        ("IPv4-mapped loopback", OfflineFrames.wifiLanUpgradePath(addresses: [mappedLoopback], port: 20_001)),
        ("unspecified", OfflineFrames.wifiLanUpgradePath(addresses: [[0, 0, 0, 0]], port: 20_001)),
        ("multicast", OfflineFrames.wifiLanUpgradePath(addresses: [[224, 0, 0, 251]], port: 20_001)),
        ("broadcast", OfflineFrames.wifiLanUpgradePath(addresses: [[255, 255, 255, 255]], port: 20_001)),
        ("17 candidates", OfflineFrames.wifiLanUpgradePath(
            addresses: (1...17).map { [10, 0, 0, UInt8($0)] }, port: 20_001)),
    ]

    @Test(
        "An upgrade offer with a refused address or too many candidates drops the peer without a connect attempt",
        arguments: refusedPaths.map(\.0))
    func refusedUpgradePath(_ name: String) async throws {
        let path = try #require(Self.refusedPaths.first { $0.0 == name }?.1)
        let lone = LoneEngine()
        let peer = try await Self.connected(lone)
        _ = try await eventually("the scripted peer's encryption") { await peer.isConnected ? true : nil }
        try await peer.sendEncrypted(OfflineFrames.upgradePathAvailable(path))

        let error = try #require(try await lone.disconnectionError())
        #expect(error.code == .invalidFrame, "\(error)")
        #expect(lone.upgradeMedium.connectAttempts.withLock { $0 } == 0)
        _ = try await eventually("the engine to close the channel") { await peer.closed ? true : nil }
        #expect(await lone.engine.connectedEndpoints().isEmpty)
        await lone.engine.shutdown()
    }

    @Test("A plaintext keep-alive is taken around the switch to encryption, and drops the peer once it sent encrypted frames")
    func plaintextKeepAliveAfterEncryptedFrames() async throws {
        // A window no slow machine runs out of: this test is about the peer's first encrypted frame.
        var timeouts = EndpointSession.Timeouts()
        timeouts.plaintextKeepAliveWindow = .seconds(600)
        let lone = LoneEngine(timeouts: timeouts)
        let peer = try await Self.connected(lone)
        // The engine's encryption is on; the peer may not have read the engine's response yet, so a plaintext
        // keep-alive is tolerated and answered.
        try await peer.sendPlaintext(OfflineFrames.keepAlive(ack: false, sequenceNumber: 7))
        _ = try await eventually("the answer to the plaintext keep-alive") { await peer.sawKeepAliveAck(7) ? true : nil }
        // The peer switches; after its first encrypted frame, plaintext is a protocol violation.
        try await peer.sendEncrypted(OfflineFrames.keepAlive(ack: false, sequenceNumber: 8))
        _ = try await eventually("the answer to the encrypted keep-alive") { await peer.sawKeepAliveAck(8) ? true : nil }
        try await peer.sendPlaintext(OfflineFrames.keepAlive(ack: false, sequenceNumber: 9))

        let error = try #require(try await lone.disconnectionError())
        #expect(error.code == .invalidFrame && error.message.contains("plaintext KEEP_ALIVE"), "\(error)")
        #expect(await peer.sawKeepAliveAck(9) == false)
        #expect(await lone.engine.connectedEndpoints().isEmpty)
        await lone.engine.shutdown()
    }

    @Test("A plaintext keep-alive after the tolerance window drops the peer even before any encrypted frame")
    func plaintextKeepAliveAfterTheWindow() async throws {
        var timeouts = EndpointSession.Timeouts()
        timeouts.plaintextKeepAliveWindow = .zero
        let lone = LoneEngine(timeouts: timeouts)
        let peer = try await Self.connected(lone)
        try await peer.sendPlaintext(OfflineFrames.keepAlive(ack: false, sequenceNumber: 1))

        let error = try #require(try await lone.disconnectionError())
        #expect(error.code == .invalidFrame && error.message.contains("plaintext KEEP_ALIVE"), "\(error)")
        await lone.engine.shutdown()
    }
}
