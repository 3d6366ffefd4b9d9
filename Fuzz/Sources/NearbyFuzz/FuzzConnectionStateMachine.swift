import NearbyCore
import NearbySecurity
import NearbyWire

/// The connection lifecycle fed a random sequence of frames and local decisions. The first byte chooses the role,
/// whether the target first completes a genuine connection request and UKEY2 handshake as the peer (so that later
/// frames reach the pending-decision and connected states), and whether the peer's acceptance is sent. Then each
/// step is an operation byte and a 16-bit-length-prefixed frame body: receive the body, decide, the peer leaves, or
/// a bandwidth-upgrade channel event. Delivered payload frames go through an ``IncomingPayloadTracker``, upgrade
/// frames through a ``BandwidthUpgradeMachine``.
///
/// Invariants: a failure or disconnection closes the machine; a closed machine ignores everything.
func fuzzConnectionStateMachine(_ input: FuzzInput) {
    var input = input
    let control = input.byte()
    let outgoing = control & 0x01 != 0
    let handshake = control & 0x02 != 0
    let peerAccepts = control & 0x04 != 0
    var run = StateMachineRun(outgoing: outgoing, upgradeRole: control & 0x08 != 0 ? .initiator : .responder)
    // The machines are values: the expensive prefixes (key generation, the handshake) run once per process and
    // every input starts from a copy.
    if handshake {
        guard let prepared = outgoing ? PreparedMachines.outgoingHandshaken : PreparedMachines.incomingHandshaken
        else { return }
        run.machine = prepared
        if peerAccepts {
            run.apply(run.machine.receive(OfflineFrames.serialize(OfflineFrames.connectionResponse(accept: true))))
        }
    } else if outgoing {
        run.machine = PreparedMachines.outgoingStarted
    }
    var steps = 0
    while !input.isAtEnd, steps < 64 {
        steps += 1
        let operation = input.byte()
        let body = input.chunk16()
        switch operation % 16 {
        case 12: run.apply(run.machine.decide(accept: operation & 0x10 != 0))
        case 13: run.apply(run.machine.peerGone())
        case 14: run.upgradeEvent(ready: operation & 0x10 != 0)
        case 15: run.cancelPayload(body)
        default:
            let wasClosed = run.machine.isClosed
            let actions = run.machine.receive(body)
            fuzzCheck(!wasClosed || actions.isEmpty, "a closed connection acted on a frame")
            run.apply(actions)
        }
    }
    _ = run.tracker.failAll()
}

/// Machines past their expensive first steps, made once per process.
private enum PreparedMachines {
    static let incomingHandshaken: ConnectionStateMachine? = handshaken(outgoing: false)
    static let outgoingHandshaken: ConnectionStateMachine? = handshaken(outgoing: true)
    static let outgoingStarted: ConnectionStateMachine = {
        var run = StateMachineRun(outgoing: true, upgradeRole: .initiator)
        _ = run.machine.start()
        return run.machine
    }()

    static func handshaken(outgoing: Bool) -> ConnectionStateMachine? {
        var run = StateMachineRun(outgoing: outgoing, upgradeRole: .initiator)
        return run.handshake() ? run.machine : nil
    }
}

private struct StateMachineRun {
    static let local = ConnectionStateMachine.LocalEndpoint(endpointID: "FUZZ", endpointInfo: Array("fuzz".utf8))

    var machine: ConnectionStateMachine
    var tracker = IncomingPayloadTracker()
    var upgrade: BandwidthUpgradeMachine
    let outgoing: Bool

    init(outgoing: Bool, upgradeRole: BandwidthUpgradeMachine.Role) {
        self.outgoing = outgoing
        machine = outgoing
            ? .outgoing(local: Self.local, medium: .wifiLAN, peerEndpointID: "PEER", peerEndpointInfo: [1], nonce: 7)
            : .incoming(local: Self.local, medium: .wifiLAN)
        upgrade = BandwidthUpgradeMachine(role: upgradeRole)
    }

    /// Plays the genuine peer through the connection request and UKEY2; true when the machine awaits decisions.
    mutating func handshake() -> Bool {
        if outgoing {
            var server = Ukey2Server(privateKey: FuzzKeys.server, random: FuzzKeys.random)
            let started = machine.start()
            guard started.count == 2, case .sendRaw(let clientInit) = started[1],
                case .send(let serverInit) = server.receive(clientInit)
            else {
                fuzzCheck(false, "outgoing start did not produce a ClientInit the peer accepts")
                return false
            }
            let finished = machine.receive(serverInit)
            guard case .sendRaw(let clientFinished) = finished.first, case .complete = server.receive(clientFinished) else {
                fuzzCheck(false, "outgoing handshake did not complete")
                return false
            }
        } else {
            let request = OfflineFrames.connectionRequest(.init(
                endpointID: "PEER", endpointInfo: [1, 2, 3], nonce: 9, mediums: [.wifiLan],
                keepAliveIntervalMillis: 5_000, keepAliveTimeoutMillis: 30_000))
            _ = machine.receive(OfflineFrames.serialize(request))
            var client = Ukey2Client(privateKey: FuzzKeys.client, random: FuzzKeys.random)
            guard let clientInit = try? client.start(),
                case .sendRaw(let serverInit) = machine.receive(clientInit).first,
                case .sendAndComplete(let clientFinished, _) = client.receive(serverInit)
            else {
                fuzzCheck(false, "incoming handshake did not reach ClientFinished")
                return false
            }
            _ = machine.receive(clientFinished)
        }
        fuzzCheck(machine.isAwaitingDecisions, "a genuine handshake did not reach the decisions")
        return machine.isAwaitingDecisions
    }

    mutating func apply(_ actions: [ConnectionStateMachine.Action]) {
        for action in actions {
            switch action {
            case .fail, .peerDisconnected, .rejected:
                fuzzCheck(machine.isClosed, "the connection ended but the machine is not closed")
                _ = tracker.failAll()
            case .deliver(let frame):
                for trackerAction in tracker.receive(frame) {
                    if case .bytesReceived(_, let bytes) = trackerAction {
                        fuzzCheck(bytes.count <= PayloadLimits.maxBytesPayloadSize, "a BYTES payload over the limit")
                    }
                }
            case .upgrade(let negotiation):
                _ = upgrade.receive(negotiation, canConnect: { _ in true })
            case .sendRaw, .sendFrame, .requestReceived, .initiated, .enableEncryption, .connected,
                .disconnectAcknowledged, .peerLeaving, .reconnectIntroduction, .resume:
                break
            }
        }
    }

    mutating func upgradeEvent(ready: Bool) {
        _ = ready ? upgrade.newChannelReady() : upgrade.newChannelFailed(NearbyError(.mediumUnavailable, "fuzz"))
    }

    mutating func cancelPayload(_ body: [UInt8]) {
        let id = body.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        _ = body.count % 2 == 0 ? tracker.cancel(id) : tracker.failLocally(id)
    }
}
