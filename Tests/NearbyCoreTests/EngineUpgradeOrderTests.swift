import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// The order of an engine's bandwidth upgrade frames when the peer (a scripted initiator) sends its
/// LAST_WRITE_TO_PRIOR_CHANNEL before the new channel's CLIENT_INTRODUCTION_ACK, as a fast initiator does when the
/// new channel is slow to deliver the ack (the BlueZ rig's test l, through QEMU's NAT): our LAST_WRITE and our
/// SAFE_TO_CLOSE must both go out on the prior channel, before the plaintext goodbye there.
@Suite("Bandwidth upgrade frame order against a scripted initiator", .timeLimit(.minutes(5)))
struct EngineUpgradeOrderTests {
    @Test("The peer's LAST_WRITE before the ack: our LAST_WRITE and SAFE_TO_CLOSE on the prior channel, then the plaintext goodbye")
    func peerLastWriteBeforeAck() async throws {
        let lone = LoneEngine()
        let (peer, newChannel, listener) = try await Self.upgradeUntilSafeToClose(lone)
        try await peer.sendEncrypted(OfflineFrames.safeToClosePriorChannel())
        // The engine switches and says goodbye on the prior channel in plaintext.
        _ = try await eventually("the plaintext goodbye on the prior channel") {
            await peer.upgradeArrivals().contains(nil) ? true : nil
        }
        #expect(await peer.upgradeArrivals() == [.lastWriteToPriorChannel, .safeToClosePriorChannel, nil])
        _ = try await lone.log.wait(EngineUpgradeTests.isMediumChange)
        await newChannel.close()
        await listener.stop()
        await lone.engine.shutdown()
    }

    @Test("A goodbye that the prior channel never takes is cut off after priorChannelGoodbye; the connection goes on")
    func stuckGoodbyeOnThePriorChannel() async throws {
        var timeouts = EndpointSession.Timeouts()
        timeouts.priorChannelGoodbye = .milliseconds(300)
        let lone = LoneEngine(timeouts: timeouts)
        let (peer, newChannel, listener) = try await Self.upgradeUntilSafeToClose(lone)
        // The peer stops reading the prior channel: the engine's plaintext goodbye there never completes.
        lone.firstMedium.stallOpenedChannelWrites()
        try await peer.sendEncrypted(OfflineFrames.safeToClosePriorChannel())
        _ = try await lone.log.wait(EngineUpgradeTests.isMediumChange)
        // The goodbye got stuck, and closing the prior channel at its deadline failed it (it waited for good before).
        _ = try await eventually(within: 30, "the stuck goodbye to end") {
            lone.firstMedium.stalledWritesSoFar >= 1 && lone.firstMedium.stalledWriteCount == 0 ? true : nil
        }
        _ = try await eventually("the prior channel's end at the scripted peer") { await peer.closed ? true : nil }
        #expect(await !lone.log.events.contains { if case .endpoint(.disconnected) = $0 { true } else { false } })
        await newChannel.close()
        await listener.stop()
        await lone.engine.shutdown()
    }

    /// Connects a scripted initiator, offers an upgrade, acknowledges the engine's introduction on the new channel
    /// after the peer's LAST_WRITE, and waits for the engine's SAFE_TO_CLOSE on the prior channel.
    static func upgradeUntilSafeToClose(
        _ lone: LoneEngine
    ) async throws -> (ScriptedPeer, any EndpointChannel, any UpgradeListener) {
        let peer = try await EngineHostilePeerTests.connected(lone)
        _ = try await eventually("the scripted peer's encryption") { await peer.isConnected ? true : nil }

        let (arrived, arrival) = AsyncStream<any EndpointChannel>.makeStream()
        let listener = try await InMemoryUpgradeMedium(air: lone.air).startUpgradeListener { arrival.yield($0) }
        try await peer.sendEncrypted(OfflineFrames.upgradePathAvailable(listener.pathInfo))
        var channels = arrived.makeAsyncIterator()
        let newChannel = try requireValue(await channels.next(), "the engine's upgrade channel")
        let introduction = try requireValue(try await newChannel.readFrame(), "the CLIENT_INTRODUCTION")
        guard case .bandwidthUpgradeNegotiation(let frame) = try OfflineFrameParser.parse(introduction) else {
            throw TestTimeout(description: "the first frame on the new channel is not a bandwidth upgrade frame")
        }
        #expect(frame.eventType == .clientIntroduction)

        // Our LAST_WRITE on the prior channel before the ack; the keep-alive's answer shows the engine read it.
        try await peer.sendEncrypted(OfflineFrames.lastWriteToPriorChannel())
        try await peer.sendEncrypted(OfflineFrames.keepAlive(ack: false, sequenceNumber: 41))
        _ = try await eventually("the keep-alive after our LAST_WRITE answered") { await peer.sawKeepAliveAck(41) ? true : nil }
        try await newChannel.writeFrame(OfflineFrames.serialize(OfflineFrames.clientIntroductionAck()))

        // The engine drains: its LAST_WRITE, then its SAFE_TO_CLOSE (our LAST_WRITE is in already).
        _ = try await eventually("the engine's SAFE_TO_CLOSE on the prior channel") {
            await peer.upgradeArrivals().contains(.safeToClosePriorChannel) ? true : nil
        }
        return (peer, newChannel, listener)
    }
}
