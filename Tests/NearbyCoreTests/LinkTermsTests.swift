import Foundation
import NearbyCore
import NearbySecurity
import NearbyWire
import Testing

/// What two connection machines agree on in their CONNECTION_RESPONSEs (docs/LINK-SAFETY.md): the
/// `safe_to_disconnect_version` every peer gets (1), swift-nearby's extension announcement that only a
/// swift-nearby peer can check, and the safe-to-disconnect exchange that follows from them.
@Suite("Link terms and safe-to-disconnect", .timeLimit(.minutes(1)))
struct LinkTermsTests {
    static func connected(
        clientFeatures: PeerExtension.Features = .all, serverFeatures: PeerExtension.Features = .all
    ) throws -> MachinePair {
        var pair = MachinePair()
        pair.client = .outgoing(
            local: .init(endpointID: "CLNT", endpointInfo: Array("client".utf8), features: clientFeatures),
            medium: .wifiLAN, peerEndpointID: "SRVR", peerEndpointInfo: Array("server".utf8))
        pair.server = .incoming(
            local: .init(endpointID: "SRVR", endpointInfo: Array("server".utf8), features: serverFeatures),
            medium: .wifiLAN)
        try pair.run(clientActions: pair.client.start())
        try pair.run(clientActions: pair.client.decide(accept: true))
        try pair.run(clientActions: [], serverActions: pair.server.decide(accept: true))
        #expect(pair.client.isConnected && pair.server.isConnected)
        return pair
    }

    @Test("Our response announces version 1 and carries a 20-byte announcement in handshake_data")
    func responseFields() throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        let actions = pair.client.decide(accept: true)
        guard case .sendFrame(let frame) = try #require(actions.first) else {
            Issue.record("no response frame")
            return
        }
        let response = frame.v1.connectionResponse
        #expect(response.hasSafeToDisconnectVersion && response.safeToDisconnectVersion == 1)
        #expect(response.handshakeData.count == PeerExtension.announcementLength)
        #expect(Array(response.handshakeData.prefix(3)) == [0x53, 0x4E, 1])
        #expect(response.response == .accept && response.status == 0 && response.multiplexSocketBitmask == 0)
    }

    @Test("Two swift-nearby sides share every feature and the same reconnect key")
    func swiftNearbyPair() throws {
        let pair = try Self.connected()
        #expect(pair.client.terms.peerVersion == 1 && pair.server.terms.peerVersion == 1)
        #expect(pair.client.terms.sharedFeatures == .all && pair.server.terms.sharedFeatures == .all)
        let key = try #require(pair.client.terms.reconnectKey)
        #expect(key == pair.server.terms.reconnectKey && key.count == 32)
        #expect(pair.client.terms.awaitsPayloadAcks && pair.client.terms.resumes && pair.client.terms.safeToDisconnect)
        #expect(pair.client.terms.acknowledges(.bytes))
    }

    @Test("A side with auto-reconnect off shares payload acks only")
    func reconnectOff() throws {
        let pair = try Self.connected(serverFeatures: [.payloadAcks])
        #expect(pair.client.terms.sharedFeatures == [.payloadAcks])
        #expect(pair.client.terms.reconnectKey == nil && !pair.client.terms.reconnects)
        #expect(pair.server.terms.sharedFeatures == [.payloadAcks])
    }

    @Test("A version-0 peer (no safe_to_disconnect_version, no announcement) gets the legacy behaviour")
    func legacyPeer() throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        _ = pair.client.decide(accept: true)
        // The scripted peer's response, as swift-nearby and Google sent it before: version 0.
        var legacy = OfflineFrames.connectionResponse(accept: true)
        legacy.v1.connectionResponse.clearSafeToDisconnectVersion()
        let actions = pair.client.receive(OfflineFrames.serialize(legacy))
        #expect(actions.contains { if case .connected = $0 { true } else { false } })
        #expect(pair.client.terms == LinkTerms())
        #expect(!pair.client.terms.safeToDisconnect && !pair.client.terms.acknowledges(.file))
        let (leave, isSafe) = pair.client.leave()
        #expect(!isSafe)
        guard case .sendFrame(let goodbye) = try #require(leave.first) else {
            Issue.record("no goodbye")
            return
        }
        #expect(goodbye.v1.disconnection.requestSafeToDisconnect == false)
        #expect(goodbye.v1.disconnection.ackSafeToDisconnect == false)
        #expect(pair.client.isClosed)
    }

    @Test("A Google peer at version 6 gets PAYLOAD_ACK for files and streams, and is never waited for")
    func googleVersionSix() throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        _ = pair.client.decide(accept: true)
        let response = OfflineFrames.connectionResponse(accept: true, safeToDisconnectVersion: 6)
        _ = pair.client.receive(OfflineFrames.serialize(response))
        let terms = pair.client.terms
        #expect(terms.peerVersion == 6 && terms.sharedFeatures.isEmpty && !terms.reconnects)
        #expect(terms.acknowledges(.file) && terms.acknowledges(.stream) && !terms.acknowledges(.bytes))
        #expect(!terms.awaitsPayloadAcks && terms.safeToDisconnect)
    }

    @Test("An announcement made for another handshake, or altered, is ignored")
    func forgedAnnouncement() throws {
        // The server's genuine announcement of another connection, replayed here.
        var other = MachinePair()
        try other.run(clientActions: other.client.start())
        let replayed = try Self.response(other.server.decide(accept: true))

        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        _ = pair.client.decide(accept: true)
        var copy = pair
        _ = copy.client.receive(OfflineFrames.serialize(replayed))
        #expect(copy.client.terms.peerVersion == 1 && copy.client.terms.sharedFeatures.isEmpty)

        // This connection's announcement with one bit of the feature byte flipped.
        var altered = try Self.response(pair.server.decide(accept: true))
        var data = Array(altered.v1.connectionResponse.handshakeData)
        data[3] ^= 0x04
        altered.v1.connectionResponse.handshakeData = Data(data)
        _ = pair.client.receive(OfflineFrames.serialize(altered))
        #expect(pair.client.terms.sharedFeatures.isEmpty && pair.client.terms.reconnectKey == nil)
    }

    static func response(_ actions: [ConnectionStateMachine.Action]) throws -> ProtoOfflineFrame {
        guard case .sendFrame(let frame) = try #require(actions.first) else {
            throw NearbyError(.invalidFrame, "no response frame")
        }
        return frame
    }

    @Test("Safe disconnect: the leaving side asks, the peer confirms and waits for the close")
    func safeDisconnect() throws {
        var pair = try Self.connected()
        let (request, isSafe) = pair.client.leave()
        #expect(isSafe && pair.client.isDisconnecting && !pair.client.isConnected)
        try pair.run(clientActions: request)
        #expect(pair.serverEvents.contains { if case .peerLeaving = $0 { true } else { false } })
        #expect(pair.clientEvents.contains { if case .disconnectAcknowledged = $0 { true } else { false } })
        #expect(pair.client.isClosed && pair.server.isClosed)
    }

    @Test("Safe disconnect from both sides at once: each request answers the other")
    func simultaneousSafeDisconnect() throws {
        var pair = try Self.connected()
        let (fromClient, _) = pair.client.leave()
        let (fromServer, _) = pair.server.leave()
        try pair.run(clientActions: fromClient, serverActions: fromServer)
        #expect(pair.serverEvents.contains { if case .disconnectAcknowledged = $0 { true } else { false } })
        #expect(pair.clientEvents.contains { if case .disconnectAcknowledged = $0 { true } else { false } })
    }

    @Test("A goodbye without the request flag closes at once, also with a version-1 peer")
    func plainGoodbye() throws {
        var pair = try Self.connected()
        let actions = pair.server.receive(OfflineFrames.serialize(OfflineFrames.disconnection()))
        #expect(actions.count == 1)
        #expect(actions.contains { if case .peerDisconnected = $0 { true } else { false } })
        _ = pair
    }
}
