import NearbySecurity
import NearbyWire

/// The protocol of one connection, from the first frame on a new socket until it is connected, rejected or gone,
/// as a value type that returns actions.
///
/// Outgoing (we opened the socket): ``start()`` sends the plaintext CONNECTION_REQUEST and UKEY2 ClientInit.
/// Incoming: the first frame must be a CONNECTION_REQUEST, then UKEY2 runs with us as server. Once UKEY2 is done
/// the machine reports ``Action/initiated(_:)`` and waits for both decisions: ours through ``decide(accept:)``,
/// the peer's as a plaintext CONNECTION_RESPONSE. Both accepted → ``Action/enableEncryption(_:replay:)`` then
/// ``Action/connected(_:)``; from then on the caller decrypts every frame before passing it in and encrypts every
/// frame the machine asks it to send. Keep-alives are answered with the same sequence number; a premature
/// bandwidth upgrade offer is answered with UPGRADE_FAILURE, and once connected every bandwidth upgrade frame goes
/// to the caller's ``BandwidthUpgradeMachine`` as ``Action/upgrade(_:)``. No I/O and no clocks: the caller owns timeouts
/// (2 s for the request, 15 s for UKEY2, 3 s for frames that arrive encrypted before encryption is on).
package struct ConnectionStateMachine: Sendable {
    /// Who opened the socket.
    package enum Role: Sendable, Hashable {
        /// The peer connected to our listener; we are the UKEY2 server.
        case incoming
        /// We connected to the peer; we are the UKEY2 client.
        case outgoing
    }

    /// What this side says about itself in a connection request.
    package struct LocalEndpoint: Sendable, Hashable {
        /// Our endpoint ID.
        package var endpointID: String
        /// Our endpoint info.
        package var endpointInfo: [UInt8]
        /// The mediums this side has, in priority order: the connection request's `mediums`, which the advertiser
        /// side picks a bandwidth upgrade medium from.
        package var upgradeMediums: [MediumKind]
        /// The keep-alive settings we ask for.
        package var keepAlive: KeepAliveSettings
        /// The swift-nearby extension features we announce (only a swift-nearby peer can read them).
        package var features: PeerExtension.Features
        /// The `os_info` type our CONNECTION_RESPONSE carries; nil leaves the field out.
        package var osType: ProtoOsInfo.OsType?

        /// Creates a description of the local endpoint.
        package init(
            endpointID: String, endpointInfo: [UInt8], upgradeMediums: [MediumKind] = [.wifiLAN],
            keepAlive: KeepAliveSettings = .default, features: PeerExtension.Features = .all,
            osType: ProtoOsInfo.OsType? = nil
        ) {
            self.osType = osType
            self.endpointID = endpointID
            self.endpointInfo = endpointInfo
            self.upgradeMediums = upgradeMediums
            self.keepAlive = keepAlive
            self.features = features
        }
    }

    /// Something the I/O layer must do.
    package enum Action: Sendable {
        /// Write these bytes as one frame, as they are (plaintext OfflineFrame or UKEY2 message).
        case sendRaw([UInt8])
        /// Write this frame: encrypted if encryption is on at this point of the action list, plaintext otherwise.
        case sendFrame(ProtoOfflineFrame)
        /// The peer sent its connection request; the keep-alive settings to use are known.
        case requestReceived(endpointID: String, nonce: Int32, keepAlive: KeepAliveSettings)
        /// UKEY2 is done: ask the app to accept or reject.
        case initiated(ConnectionInfo)
        /// Turn encryption on with this channel, then decrypt and pass in the frames in `replay`, in order.
        case enableEncryption(D2DSecureChannel, replay: [[UInt8]])
        /// Both sides accepted.
        case connected(ConnectionInfo)
        /// One side rejected. Close the channel, after 2 s when the rejection was ours.
        case rejected(byPeer: Bool)
        /// A connected frame for the payload engine.
        case deliver(ProtoPayloadTransferFrame)
        /// A bandwidth upgrade frame on a connected channel, for the ``BandwidthUpgradeMachine``.
        case upgrade(ProtoBandwidthUpgradeNegotiationFrame)
        /// The peer said goodbye; close the channel.
        case peerDisconnected
        /// The peer asked for a safe disconnect and our ack is queued (the action before): keep reading until the
        /// peer closes the channel (at most 10 s), then end as disconnected.
        case peerLeaving
        /// The peer confirmed our safe disconnect: it read everything we sent before it. Close now.
        case disconnectAcknowledged
        /// The first frame on a new socket is an AUTO_RECONNECT introduction: the socket is for the connection of
        /// the endpoint it names, whose session runs the reconnect handshake on it (this machine is done).
        case reconnectIntroduction(ProtoAutoReconnectFrame)
        /// An AUTO_RESUME frame on a connection that resumes payloads after a reconnect.
        case resume(ProtoAutoResumeFrame)
        /// The peer broke the protocol, or the handshake failed: close the channel now.
        case fail(NearbyError)
    }

    enum State: Sendable {
        case idle
        case awaitingRequest
        case awaitingServerInit(Ukey2Client)
        case awaitingClientInit(Ukey2Server)
        case awaitingClientFinished(Ukey2Server)
        case awaitingDecisions(Pending)
        case connected(ConnectionInfo)
        /// We asked for a safe disconnect and wait for the peer's ack; frames are still taken.
        case disconnecting
        case closed
    }

    struct Pending: Sendable {
        var info: ConnectionInfo
        var result: Ukey2HandshakeResult
        var localAccepted: Bool?
        var peerAccepted: Bool?
        var deferred: [[UInt8]] = []
    }

    /// The most frames that may arrive encrypted before this side turned encryption on.
    package static let maxDeferredFrames = 16

    /// Which side opened the socket.
    package let role: Role
    /// The medium of the channel.
    package let medium: MediumKind
    private let local: LocalEndpoint
    private var state: State
    private var peerEndpointID: String?
    private var peerEndpointInfo: [UInt8]
    private let nonce: Int32
    /// The mediums the peer listed in its connection request, those swift-nearby implements (incoming only).
    package private(set) var peerUpgradeMediums: [MediumKind] = []
    /// What both sides agreed on for the end of the connection, payload acks and reconnecting; known once
    /// connected.
    package private(set) var terms = LinkTerms()

    /// Creates the machine for an incoming socket.
    package static func incoming(local: LocalEndpoint, medium: MediumKind) -> Self {
        Self(role: .incoming, local: local, medium: medium, peerEndpointID: nil, peerEndpointInfo: [], nonce: 0)
    }

    /// Creates the machine for a socket we opened to `peerEndpointID`, whose advertised info we know.
    package static func outgoing(
        local: LocalEndpoint, medium: MediumKind, peerEndpointID: String?, peerEndpointInfo: [UInt8],
        nonce: Int32 = Int32.random(in: .min ... .max)
    ) -> Self {
        Self(
            role: .outgoing, local: local, medium: medium, peerEndpointID: peerEndpointID,
            peerEndpointInfo: peerEndpointInfo, nonce: nonce)
    }

    private init(
        role: Role, local: LocalEndpoint, medium: MediumKind, peerEndpointID: String?, peerEndpointInfo: [UInt8],
        nonce: Int32
    ) {
        self.role = role
        self.local = local
        self.medium = medium
        self.peerEndpointID = peerEndpointID
        self.peerEndpointInfo = peerEndpointInfo
        self.nonce = nonce
        state = role == .incoming ? .awaitingRequest : .idle
    }

    /// The nonce of our outgoing request (tie-break for simultaneous connections).
    package var requestNonce: Int32 { nonce }

    /// Whether both sides accepted and encryption is on.
    package var isConnected: Bool {
        if case .connected = state { return true }
        return false
    }

    /// Whether UKEY2 is done and decisions are pending.
    package var isAwaitingDecisions: Bool {
        if case .awaitingDecisions = state { return true }
        return false
    }

    /// Whether we asked the peer for a safe disconnect and wait for its ack.
    package var isDisconnecting: Bool {
        if case .disconnecting = state { return true }
        return false
    }

    /// Whether the connection is over.
    package var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// Auto-reconnect after the peer's process restarted: a new outgoing machine for the same endpoints (a new
    /// connection, with a new nonce and handshake) on `medium`; `nil` for an incoming machine.
    package func restarted(on medium: MediumKind, nonce: Int32 = Int32.random(in: .min ... .max)) -> Self? {
        guard role == .outgoing else { return nil }
        return .outgoing(
            local: local, medium: medium, peerEndpointID: peerEndpointID, peerEndpointInfo: peerEndpointInfo,
            nonce: nonce)
    }

    /// Outgoing only: the CONNECTION_REQUEST and ClientInit to send first.
    package mutating func start() -> [Action] {
        guard role == .outgoing, case .idle = state else {
            return [.fail(NearbyError(.outOfOrderApiCall, "connection already started"))]
        }
        let request = OfflineFrames.connectionRequest(.init(
            endpointID: local.endpointID, endpointInfo: local.endpointInfo, nonce: nonce,
            mediums: local.upgradeMediums.map(\.connectionRequestMedium),
            keepAliveIntervalMillis: local.keepAlive.intervalMillis,
            keepAliveTimeoutMillis: local.keepAlive.timeoutMillis))
        var client = Ukey2Client()
        do {
            let clientInit = try client.start()
            state = .awaitingServerInit(client)
            return [.sendRaw(OfflineFrames.serialize(request)), .sendRaw(clientInit)]
        } catch {
            state = .closed
            return [.fail(error)]
        }
    }

    /// Handles one received frame body: plaintext before encryption, already decrypted after.
    package mutating func receive(_ body: some Collection<UInt8>) -> [Action] {
        switch state {
        case .idle, .closed:
            return []
        case .awaitingRequest:
            return receiveRequest(body)
        case .awaitingServerInit(var client):
            return finishHandshake(client.receive(body))
        case .awaitingClientInit(var server):
            let action = server.receive(body)
            if case .send(let serverInit) = action {
                state = .awaitingClientFinished(server)
                return [.sendRaw(serverInit)]
            }
            return finishHandshake(action)
        case .awaitingClientFinished(var server):
            return finishHandshake(server.receive(body))
        case .awaitingDecisions(var pending):
            return receivePending(body, &pending)
        case .connected, .disconnecting:
            return receiveConnected(body)
        }
    }

    /// Our app's decision. Sends the plaintext CONNECTION_RESPONSE and, when the peer's decision is in, settles.
    package mutating func decide(accept: Bool) -> [Action] {
        guard case .awaitingDecisions(var pending) = state, pending.localAccepted == nil else {
            return []
        }
        pending.localAccepted = accept
        let announcement = accept ? PeerExtension.announcement(local.features, handshake: pending.result) : []
        var actions: [Action] = [.sendFrame(OfflineFrames.connectionResponse(
            accept: accept, safeToDisconnectVersion: OfflineFrames.announcedSafeToDisconnectVersion,
            handshakeData: announcement, osType: local.osType))]
        actions += settle(&pending)
        return actions
    }

    /// The peer went away (a DISCONNECTION frame or the end of the stream). A connection that either side had
    /// already refused ends as rejected, not as a failure; anything else ends as a disconnection.
    package mutating func peerGone() -> [Action] {
        guard case .awaitingDecisions(let pending) = state else {
            state = .closed
            return [.peerDisconnected]
        }
        state = .closed
        if pending.localAccepted == false { return [.rejected(byPeer: false)] }
        if pending.peerAccepted == false { return [.rejected(byPeer: true)] }
        return [.peerDisconnected]
    }

    /// Marks the connection as over (local disconnect, I/O error, timeout); later input is ignored.
    package mutating func close() {
        state = .closed
    }

    /// Our app leaves a connected endpoint. With a peer at `safe_to_disconnect_version` ≥ 1: asks it to confirm
    /// (`{request: true, ack: false}`) and keeps taking frames until ``Action/disconnectAcknowledged``; the caller
    /// bounds the wait (30 s). With a version-0 peer: the legacy goodbye (`{false, false}`), after which the
    /// caller closes (after 500 ms). Returns whether the safe exchange runs.
    package mutating func leave() -> (actions: [Action], isSafe: Bool) {
        guard case .connected = state else {
            if isAwaitingDecisions {
                state = .closed
                return ([.sendFrame(OfflineFrames.disconnection())], false)
            }
            return ([], false)
        }
        guard terms.safeToDisconnect else {
            state = .closed
            return ([.sendFrame(OfflineFrames.disconnection())], false)
        }
        state = .disconnecting
        return ([.sendFrame(OfflineFrames.disconnection(requestSafeToDisconnect: true, ackSafeToDisconnect: false))], true)
    }

    // MARK: - Phases

    private mutating func receiveRequest(_ body: some Collection<UInt8>) -> [Action] {
        let frame: InboundFrame
        do {
            frame = try OfflineFrameParser.parse(body)
        } catch {
            return fail(NearbyError(.invalidFrame, "first frame is not a valid connection request", cause: error))
        }
        if case .other(.autoReconnect, let v1) = frame, v1.hasAutoReconnect,
            v1.autoReconnect.eventType == .clientIntroduction, !v1.autoReconnect.endpointID.isEmpty
        {
            state = .closed
            return [.reconnectIntroduction(v1.autoReconnect)]
        }
        guard case .connectionRequest(let request) = frame else {
            return fail(NearbyError(.invalidFrame, "first frame is \(frame.frameType), not a connection request"))
        }
        peerEndpointID = request.endpointID
        peerEndpointInfo = Array(request.hasEndpointInfo ? request.endpointInfo : request.endpointName)
        peerUpgradeMediums = request.mediums.compactMap { MediumKind(connectionRequest: $0) }
        state = .awaitingClientInit(Ukey2Server())
        return [
            .requestReceived(
                endpointID: request.endpointID, nonce: request.nonce, keepAlive: KeepAliveSettings(request: request))
        ]
    }

    private mutating func finishHandshake(_ action: Ukey2Action) -> [Action] {
        var actions: [Action] = []
        let result: Ukey2HandshakeResult
        switch action {
        case .sendAndComplete(let clientFinished, let completed):
            actions.append(.sendRaw(clientFinished))
            result = completed
        case .complete(let completed):
            result = completed
        case .fail(let alert, let error):
            if let alert { actions.append(.sendRaw(alert)) }
            state = .closed
            return actions + [.fail(error)]
        case .send:
            return fail(NearbyError(.handshakeFailed, "unexpected UKEY2 step"))
        }
        let info = ConnectionInfo(
            endpointID: peerEndpointID ?? "", endpointInfo: peerEndpointInfo, isIncoming: role == .incoming,
            verificationDigits: result.verificationDigits, verificationToken: result.verificationToken,
            authenticationString: result.authString, medium: medium)
        state = .awaitingDecisions(Pending(info: info, result: result))
        return actions + [.initiated(info)]
    }

    private mutating func receivePending(_ body: some Collection<UInt8>, _ pending: inout Pending) -> [Action] {
        guard let frame = try? OfflineFrameParser.parse(body) else {
            // Possibly a frame the peer already encrypted (it accepted and saw our acceptance first): keep it
            // until encryption is on here.
            guard pending.deferred.count < Self.maxDeferredFrames else {
                return fail(NearbyError(.invalidFrame, "too many unreadable frames before encryption"))
            }
            pending.deferred.append(Array(body))
            state = .awaitingDecisions(pending)
            return []
        }
        switch frame {
        case .connectionResponse(let response):
            guard pending.peerAccepted == nil else { return [] }
            pending.peerAccepted = response.hasResponse ? response.response == .accept : response.status == 0
            terms = LinkTerms(
                peerVersion: response.hasSafeToDisconnectVersion ? response.safeToDisconnectVersion : 0,
                peerFeatures: PeerExtension.features(in: Array(response.handshakeData), handshake: pending.result),
                localFeatures: local.features, handshake: pending.result)
            return settle(&pending)
        case .keepAlive(let keepAlive):
            return keepAlive.ack ? [] : [.sendFrame(OfflineFrames.keepAlive(ack: true, sequenceNumber: keepAlive.seqNum))]
        case .disconnection:
            return peerGone()
        case .bandwidthUpgradeNegotiation(let negotiation) where negotiation.eventType == .upgradePathAvailable:
            // Too early: an upgrade starts once both sides accepted.
            return [.sendFrame(OfflineFrames.upgradeFailure(negotiation.upgradePathInfo))]
        default:
            // Frames from an endpoint that is not connected yet are dropped.
            return []
        }
    }

    private mutating func settle(_ pending: inout Pending) -> [Action] {
        guard let local = pending.localAccepted, let peer = pending.peerAccepted else {
            state = .awaitingDecisions(pending)
            return []
        }
        if local && peer {
            state = .connected(pending.info)
            return [.enableEncryption(pending.result.makeSecureChannel(), replay: pending.deferred), .connected(pending.info)]
        }
        state = .closed
        return [.rejected(byPeer: !peer)]
    }

    private mutating func receiveConnected(_ body: some Collection<UInt8>) -> [Action] {
        let frame: InboundFrame
        do {
            frame = try OfflineFrameParser.parse(body)
        } catch {
            return fail(error)
        }
        switch frame {
        case .payloadTransfer(let transfer):
            return [.deliver(transfer)]
        case .keepAlive(let keepAlive):
            return keepAlive.ack ? [] : [.sendFrame(OfflineFrames.keepAlive(ack: true, sequenceNumber: keepAlive.seqNum))]
        case .disconnection(let goodbye):
            return receiveGoodbye(goodbye)
        case .bandwidthUpgradeNegotiation(let negotiation):
            return [.upgrade(negotiation)]
        case .other(.autoResume, let v1) where terms.resumes && v1.hasAutoResume:
            return [.resume(v1.autoResume)]
        case .connectionRequest, .connectionResponse, .other:
            return []
        }
    }

    /// A DISCONNECTION on a connected channel, or while we wait for the ack of our own. Without the request flag
    /// (or with a version-0 peer) it means "closing now".
    private mutating func receiveGoodbye(_ goodbye: ProtoDisconnectionFrame) -> [Action] {
        let waitingForAck = isDisconnecting
        state = .closed
        guard terms.safeToDisconnect, goodbye.requestSafeToDisconnect else { return [.peerDisconnected] }
        if goodbye.ackSafeToDisconnect {
            return waitingForAck ? [.disconnectAcknowledged] : [.peerDisconnected]
        }
        let ack = Action.sendFrame(OfflineFrames.disconnection(requestSafeToDisconnect: true, ackSafeToDisconnect: true))
        // Both sides left at once: our ack goes out, and the peer's request answers ours as well as an ack would.
        return waitingForAck ? [ack, .disconnectAcknowledged] : [ack, .peerLeaving]
    }

    private mutating func fail(_ error: NearbyError) -> [Action] {
        state = .closed
        return [.fail(error)]
    }
}

/// What both sides of a connection agreed on for its end, payload acknowledgements and reconnecting, from their
/// CONNECTION_RESPONSEs: the peer's `safe_to_disconnect_version` and, from a swift-nearby peer, its extension
/// features (docs/LINK-SAFETY.md).
package struct LinkTerms: Sendable, Hashable {
    /// The peer's `safe_to_disconnect_version` (0 when it sent none).
    package var peerVersion: Int32 = 0
    /// The swift-nearby features both sides announced; empty with any other peer.
    package var sharedFeatures: PeerExtension.Features = []
    /// The key of reconnect proofs, when both sides reconnect.
    package var reconnectKey: [UInt8]?

    /// Terms of a connection nothing was agreed on yet (version 0: the legacy behaviour).
    package init() {}

    /// The terms from the peer's response.
    package init(
        peerVersion: Int32, peerFeatures: PeerExtension.Features?, localFeatures: PeerExtension.Features,
        handshake: Ukey2HandshakeResult
    ) {
        self.peerVersion = peerVersion
        sharedFeatures = (peerFeatures ?? []).intersection(localFeatures)
        if sharedFeatures.contains(.autoReconnect) { reconnectKey = PeerExtension.reconnectKey(handshake) }
    }

    /// Whether a disconnect runs the request/ack exchange (both sides at version ≥ 1; we always are).
    package var safeToDisconnect: Bool { peerVersion >= 1 }

    /// Whether we acknowledge the peer's payloads of `kind` once we have them: FILE and STREAM when it announced
    /// version ≥ 6 (Google's rule), every kind with a swift-nearby peer.
    package func acknowledges(_ kind: PayloadKind) -> Bool {
        if sharedFeatures.contains(.payloadAcks) { return true }
        return kind != .bytes && peerVersion >= OfflineFrames.payloadAckVersion
    }

    /// Whether our payloads count as sent only once the peer acknowledged them: only with a swift-nearby peer
    /// (we announce version 1, so other peers never acknowledge ours).
    package var awaitsPayloadAcks: Bool { sharedFeatures.contains(.payloadAcks) }

    /// Whether a broken channel is re-established (both sides swift-nearby, both with a reconnect window).
    package var reconnects: Bool { reconnectKey != nil }

    /// Whether payloads in flight resume after a reconnect (which needs payload acks: a payload is only done once
    /// the receiver has it).
    package var resumes: Bool {
        reconnects && sharedFeatures.contains(.autoResume) && sharedFeatures.contains(.payloadAcks)
    }
}

extension PeerExtension.Features {
    /// Every feature swift-nearby has.
    package static let all: Self = [.payloadAcks, .autoReconnect, .autoResume]
}
