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
        /// The `os_info` type our CONNECTION_RESPONSE carries; nil leaves the field out.
        package var osType: ProtoOsInfo.OsType?

        /// Creates a description of the local endpoint.
        package init(
            endpointID: String, endpointInfo: [UInt8], upgradeMediums: [MediumKind] = [.wifiLAN],
            keepAlive: KeepAliveSettings = .default, osType: ProtoOsInfo.OsType? = nil
        ) {
            self.osType = osType
            self.endpointID = endpointID
            self.endpointInfo = endpointInfo
            self.upgradeMediums = upgradeMediums
            self.keepAlive = keepAlive
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

    /// Whether the connection is over.
    package var isClosed: Bool {
        if case .closed = state { return true }
        return false
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
    package mutating func receive(_ body: [UInt8]) -> [Action] {
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
        case .connected:
            return receiveConnected(body)
        }
    }

    /// Our app's decision. Sends the plaintext CONNECTION_RESPONSE and, when the peer's decision is in, settles.
    package mutating func decide(accept: Bool) -> [Action] {
        guard case .awaitingDecisions(var pending) = state, pending.localAccepted == nil else {
            return []
        }
        pending.localAccepted = accept
        var actions: [Action] = [.sendFrame(OfflineFrames.connectionResponse(accept: accept, osType: local.osType))]
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

    // MARK: - Phases

    private mutating func receiveRequest(_ body: [UInt8]) -> [Action] {
        let frame: InboundFrame
        do {
            frame = try OfflineFrameParser.parse(body)
        } catch {
            return fail(NearbyError(.invalidFrame, "first frame is not a valid connection request", cause: error))
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

    private mutating func receivePending(_ body: [UInt8], _ pending: inout Pending) -> [Action] {
        guard let frame = try? OfflineFrameParser.parse(body) else {
            // Possibly a frame the peer already encrypted (it accepted and saw our acceptance first): keep it
            // until encryption is on here.
            guard pending.deferred.count < Self.maxDeferredFrames else {
                return fail(NearbyError(.invalidFrame, "too many unreadable frames before encryption"))
            }
            pending.deferred.append(body)
            state = .awaitingDecisions(pending)
            return []
        }
        switch frame {
        case .connectionResponse(let response):
            guard pending.peerAccepted == nil else { return [] }
            pending.peerAccepted = response.hasResponse ? response.response == .accept : response.status == 0
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

    private mutating func receiveConnected(_ body: [UInt8]) -> [Action] {
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
        case .disconnection:
            state = .closed
            return [.peerDisconnected]
        case .bandwidthUpgradeNegotiation(let negotiation):
            return [.upgrade(negotiation)]
        case .connectionRequest, .connectionResponse, .other:
            return []
        }
    }

    private mutating func fail(_ error: NearbyError) -> [Action] {
        state = .closed
        return [.fail(error)]
    }
}
