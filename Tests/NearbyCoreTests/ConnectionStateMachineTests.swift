import NearbyCore
import NearbySecurity
import NearbyWire
import Testing

/// Two state machines wired back to back, with the I/O layer's duties (encrypting once encryption is on)
/// played by the test.
struct MachinePair {
    var client: ConnectionStateMachine
    var server: ConnectionStateMachine
    var clientSecure: D2DSecureChannel?
    var serverSecure: D2DSecureChannel?
    var clientEvents: [ConnectionStateMachine.Action] = []
    var serverEvents: [ConnectionStateMachine.Action] = []

    init() {
        client = .outgoing(
            local: .init(endpointID: "CLNT", endpointInfo: Array("client".utf8)), medium: .wifiLAN,
            peerEndpointID: "SRVR", peerEndpointInfo: Array("server".utf8))
        server = .incoming(local: .init(endpointID: "SRVR", endpointInfo: Array("server".utf8)), medium: .wifiLAN)
    }

    /// Performs actions from one side, delivering what it sends to the other side, until quiet.
    mutating func run(clientActions: [ConnectionStateMachine.Action], serverActions: [ConnectionStateMachine.Action] = []) throws {
        var toServer: [[UInt8]] = []
        var toClient: [[UInt8]] = []
        func outbound(_ actions: [ConnectionStateMachine.Action], secure: inout D2DSecureChannel?, events: inout [ConnectionStateMachine.Action]) throws -> [[UInt8]] {
            var bytes: [[UInt8]] = []
            for action in actions {
                switch action {
                case .sendRaw(let raw): bytes.append(raw)
                case .sendFrame(let frame):
                    let serialized = OfflineFrames.serialize(frame)
                    bytes.append(secure != nil ? try secure!.encode(serialized) : serialized)
                case .enableEncryption(let channel, _): secure = channel; events.append(action)
                default: events.append(action)
                }
            }
            return bytes
        }
        toServer += try outbound(clientActions, secure: &clientSecure, events: &clientEvents)
        toClient += try outbound(serverActions, secure: &serverSecure, events: &serverEvents)
        while !toServer.isEmpty || !toClient.isEmpty {
            if !toServer.isEmpty {
                var body = toServer.removeFirst()
                if serverSecure != nil { body = try serverSecure!.decode(body) }
                toClient += try outbound(server.receive(body), secure: &serverSecure, events: &serverEvents)
            }
            if !toClient.isEmpty {
                var body = toClient.removeFirst()
                if clientSecure != nil { body = try clientSecure!.decode(body) }
                toServer += try outbound(client.receive(body), secure: &clientSecure, events: &clientEvents)
            }
        }
    }

    static func initiated(_ events: [ConnectionStateMachine.Action]) -> ConnectionInfo? {
        for case .initiated(let info) in events { return info }
        return nil
    }
}

struct ConnectionStateMachineTests {
    @Test("Request, UKEY2 and both acceptances connect both sides with matching codes", .timeLimit(.minutes(5)))
    func happyPath() throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        let clientInfo = try #require(MachinePair.initiated(pair.clientEvents))
        let serverInfo = try #require(MachinePair.initiated(pair.serverEvents))
        #expect(clientInfo.verificationDigits == serverInfo.verificationDigits)
        #expect(clientInfo.verificationToken == serverInfo.verificationToken)
        #expect(serverInfo.endpointID == "CLNT" && serverInfo.endpointInfo == Array("client".utf8) && serverInfo.isIncoming)
        #expect(clientInfo.endpointID == "SRVR" && !clientInfo.isIncoming)
        #expect(pair.server.isAwaitingDecisions && pair.client.isAwaitingDecisions)

        try pair.run(clientActions: pair.client.decide(accept: true))
        #expect(!pair.client.isConnected, "one decision is not enough")
        try pair.run(clientActions: [], serverActions: pair.server.decide(accept: true))
        #expect(pair.client.isConnected && pair.server.isConnected)
        #expect(pair.clientSecure != nil && pair.serverSecure != nil)
    }

    @Test("A rejection by either side rejects both", .timeLimit(.minutes(5)), arguments: [true, false])
    func rejection(serverRejects: Bool) throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        try pair.run(clientActions: pair.client.decide(accept: serverRejects))
        try pair.run(clientActions: [], serverActions: pair.server.decide(accept: !serverRejects))
        let clientRejected = pair.clientEvents.contains { if case .rejected = $0 { true } else { false } }
        let serverRejected = pair.serverEvents.contains { if case .rejected = $0 { true } else { false } }
        #expect(clientRejected && serverRejected)
        #expect(pair.client.isClosed && pair.server.isClosed)
    }

    @Test("A peer that leaves after a refusal ends the connection as rejected, not failed", .timeLimit(.minutes(5)), arguments: [true, false])
    func leaveAfterRefusal(localRefused: Bool) throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        if localRefused {
            _ = pair.server.decide(accept: false)
        } else {
            let response = OfflineFrames.serialize(OfflineFrames.connectionResponse(accept: false))
            #expect(pair.server.receive(response).isEmpty, "the local decision is still pending")
        }
        let actions = pair.server.peerGone()
        guard case .rejected(let byPeer) = actions.first else {
            Issue.record("expected rejected, got \(actions)")
            return
        }
        #expect(byPeer == !localRefused)
        #expect(pair.server.isClosed)
    }

    @Test("A peer that leaves before any decision ends as a disconnection", .timeLimit(.minutes(5)))
    func leaveBeforeDecisions() throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        let actions = pair.server.peerGone()
        guard case .peerDisconnected = actions.first else {
            Issue.record("expected peerDisconnected, got \(actions)")
            return
        }
    }

    @Test("Keep-alives are answered with the same sequence number, before and after encryption", .timeLimit(.minutes(5)))
    func keepAlive() throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        let ping = OfflineFrames.serialize(OfflineFrames.keepAlive(ack: false, sequenceNumber: 41))
        let reply = pair.server.receive(ping)
        guard case .sendFrame(let frame) = try #require(reply.first) else { Issue.record("no reply"); return }
        #expect(frame.v1.keepAlive.ack && frame.v1.keepAlive.seqNum == 41)
        try pair.run(clientActions: pair.client.decide(accept: true), serverActions: pair.server.decide(accept: true))
        guard case .sendFrame(let after) = try #require(pair.server.receive(ping).first) else {
            Issue.record("no reply"); return
        }
        #expect(after.v1.keepAlive.seqNum == 41)
    }

    @Test("An upgrade offer before both accepted is answered with UPGRADE_FAILURE; after, it goes to the upgrade machine", .timeLimit(.minutes(5)))
    func upgradeOffers() throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        #expect(pair.server.peerUpgradeMediums == [.wifiLAN])
        let offer = OfflineFrames.upgradePathAvailableWifiLan(addresses: [[10, 1, 2, 3]], port: 5555)
        guard case .sendFrame(let answer) = try #require(pair.client.receive(OfflineFrames.serialize(offer)).first) else {
            Issue.record("no answer"); return
        }
        #expect(answer.v1.bandwidthUpgradeNegotiation.eventType == .upgradeFailure)
        #expect(answer.v1.bandwidthUpgradeNegotiation.upgradePathInfo == offer.v1.bandwidthUpgradeNegotiation.upgradePathInfo)
        try pair.run(clientActions: pair.client.decide(accept: true), serverActions: pair.server.decide(accept: true))
        guard case .upgrade(let negotiation) = try #require(pair.client.receive(OfflineFrames.serialize(offer)).first) else {
            Issue.record("not passed on"); return
        }
        #expect(negotiation == offer.v1.bandwidthUpgradeNegotiation)
    }

    @Test("Payload frames before both acceptances are dropped; after, they are delivered", .timeLimit(.minutes(5)))
    func filtersUnconfirmed() throws {
        var pair = MachinePair()
        try pair.run(clientActions: pair.client.start())
        let data = OfflineFrames.serialize(OfflineFrames.payloadData(
            header: OfflineFrames.payloadHeader(id: 1, type: .bytes, totalSize: 1), offset: 0, body: .init([1]),
            index: 0, isLast: false))
        #expect(pair.server.receive(data).isEmpty)
        try pair.run(clientActions: pair.client.decide(accept: true), serverActions: pair.server.decide(accept: true))
        guard case .deliver = try #require(pair.server.receive(data).first) else { Issue.record("not delivered"); return }
    }

    @Test("A first frame that is not a connection request fails the connection", .timeLimit(.minutes(5)))
    func badFirstFrame() {
        var server = ConnectionStateMachine.incoming(local: .init(endpointID: "SRVR", endpointInfo: [1]), medium: .wifiLAN)
        let actions = server.receive(OfflineFrames.serialize(OfflineFrames.keepAlive(ack: false, sequenceNumber: 0)))
        guard case .fail(let error) = actions.first else { Issue.record("did not fail"); return }
        #expect(error.code == .invalidFrame)
        #expect(server.isClosed)
        var garbage = ConnectionStateMachine.incoming(local: .init(endpointID: "SRVR", endpointInfo: [1]), medium: .wifiLAN)
        guard case .fail = garbage.receive([0xFF, 0x01, 0x02]).first else { Issue.record("did not fail"); return }
    }

    @Test("A ClientFinished that does not match the commitment fails the server", .timeLimit(.minutes(5)))
    func wrongCommitment() throws {
        var server = ConnectionStateMachine.incoming(local: .init(endpointID: "SRVR", endpointInfo: [1]), medium: .wifiLAN)
        _ = server.receive(OfflineFrames.serialize(OfflineFrames.connectionRequest(
            .init(endpointID: "CLNT", endpointInfo: [2], nonce: 1, mediums: [.wifiLan]))))
        var client = Ukey2Client()
        guard case .sendRaw(let serverInit) = server.receive(try client.start()).first else {
            Issue.record("no ServerInit"); return
        }
        // Another client answers the same ServerInit: a well-formed ClientFinished with the wrong key.
        var other = Ukey2Client()
        _ = try other.start()
        guard case .sendAndComplete(let wrongFinished, _) = other.receive(serverInit) else {
            Issue.record("helper client failed"); return
        }
        guard case .fail(let error) = server.receive(wrongFinished).last else {
            Issue.record("accepted a wrong commitment"); return
        }
        #expect(error.code == .handshakeFailed)
        #expect(server.isClosed)
    }

    @Test("The peer's endpoint info comes from field 6, else from field 2", .timeLimit(.minutes(5)))
    func endpointInfoFallback() throws {
        var request = OfflineFrames.connectionRequest(.init(endpointID: "CLNT", endpointInfo: [9, 9], nonce: 1, mediums: []))
        request.v1.connectionRequest.clearEndpointInfo()
        var pair = MachinePair()
        _ = pair.server.receive(OfflineFrames.serialize(request))
        var client = Ukey2Client()
        guard case .sendRaw(let serverInit) = pair.server.receive(try client.start()).first,
            case .sendAndComplete(let finished, _) = client.receive(serverInit)
        else { Issue.record("handshake failed"); return }
        let info = try #require(MachinePair.initiated(pair.server.receive(finished)))
        #expect(info.endpointInfo == [9, 9])
    }
}
