import AsyncAlgorithms
import Foundation
import Logging
import NearbyWire

/// Reading: frames from the peer go through the D2D context and the `ConnectionStateMachine`; the session
/// performs the machine's actions and hands payloads to the ``IncomingPayloadSink`` and negotiation frames to the
/// ``UpgradeCoordinator``.
extension EndpointSession {
    /// Handles one frame from the peer: decides and acts on it without suspending, then awaits what the decision
    /// left to wait for (``FollowUp``), in order.
    func handle(_ body: [UInt8]) async {
        var followUps: [FollowUp] = []
        receive(body, into: &followUps)
        await complete(followUps)
    }

    /// Decrypts a frame and performs the state machine's actions on it, without suspending.
    func receive(_ body: [UInt8], into followUps: inout [FollowUp]) {
        deadlines.frameRead(at: clock.now)
        if secure.isEnabled {
            do {
                let message = try secure.context.withLock { context throws(NearbyError) -> Data in
                    try context!.decodeMessage(body)
                }
                peerSentEncrypted = true
                perform(machine.receive(message), into: &followUps)
                return
            } catch {
                // Peers may send a keep-alive in plaintext around the switch to encryption (§3.6): before their
                // first encrypted frame, and not long after ours.
                guard let frame = try? OfflineFrameParser.parse(body), case .keepAlive = frame else {
                    logger.debug("undecodable frame", metadata: [
                        "bytes": "\(body.count)", "head": "\(Hex.encode(Array(body.prefix(24))))",
                        "draining": "\(upgrade.isDraining)"])
                    end(error)
                    return
                }
                let window = timeouts.plaintextKeepAliveWindow
                guard !peerSentEncrypted, let since = encryptionEnabledAt, clock.now - since < window else {
                    end(NearbyError(
                        .invalidFrame,
                        "plaintext KEEP_ALIVE after the switch to encryption (tolerated only before the peer's first encrypted frame and within \(window))"))
                    return
                }
            }
        }
        perform(machine.receive(body), into: &followUps)
    }

    /// Performs the state machine's actions, then awaits what they left to wait for.
    func perform(_ actions: [ConnectionStateMachine.Action], fromApp: Bool = false) async {
        var followUps: [FollowUp] = []
        perform(actions, fromApp: fromApp, into: &followUps)
        await complete(followUps)
    }

    /// Performs the state machine's actions, all of them, without a suspension in between: no other frame, timer
    /// or app call reaches the session before the last action of this decision is done (as in
    /// async-http-client's `HTTP1ConnectionStateMachine`). Frames go to the writer without waiting; what must
    /// wait (room in the writer for frames the peer provoked, the engine's admission, the app taking a stream
    /// chunk, the upgrade coordinator) is appended to `followUps` and awaited afterwards, in order.
    func perform(_ actions: [ConnectionStateMachine.Action], fromApp: Bool = false, into followUps: inout [FollowUp]) {
        // A rejection is the outcome even if the channel ends while the response is still being written (the
        // peer may read it and hang up before this loop gets to `.rejected`).
        for case .rejected(let byPeer) in actions { pendingRejection = byPeer }
        for action in actions where !ended {
            switch action {
            case .sendRaw(let bytes):
                writer.post(.plain(bytes))
                if !fromApp { followUps.append(.writerRoom) }
            case .sendFrame(let frame):
                if !fromApp, frame.v1.type == .keepAlive, frame.v1.keepAlive.ack, !writer.isIdle {
                    // A KEEP_ALIVE ack is skipped while other frames are on their way: they prove we are alive
                    // just as well, and a peer that floods KEEP_ALIVE and never reads cannot make acks pile up or
                    // hold our read loop.
                    continue
                }
                writer.post(writer.item(frame))
                if !fromApp { followUps.append(.writerRoom) }
            case .requestReceived(let id, let nonce, let settings):
                setPeerEndpointID(id)
                // How close the requester came to the deadline (the BLE one is longer than the protocol's 2 s).
                logger.debug("connection request", metadata: [
                    "after": "\(clock.now - startedAt)", "deadline": "\(timeouts.connectionRequest(on: readChannel.medium))"])
                let keepAlive = settings.clamped(timeoutTo: limits.peerKeepAliveTimeoutRange)
                if keepAlive != settings {
                    logger.notice("clamped the peer's keep-alive timeout", metadata: [
                        "asked": "\(settings.timeout)", "used": "\(keepAlive.timeout)"])
                }
                arm(deadlines.requestReceived(keepAlive: keepAlive))
                if admission != nil { followUps.append(.admission(endpointID: id, nonce: nonce)) }
            case .initiated(var connectionInfo):
                if let id = endpointIDValue { connectionInfo.endpointID = id }
                info = connectionInfo
                arm(deadlines.initiated(now: clock.now))
                logger.info("connection initiated", metadata: ["digits": "\(connectionInfo.verificationDigits)"])
                if restarting {
                    // A new connection to a restarted peer goes on with a connection our app accepted already.
                    perform(machine.decide(accept: true), fromApp: true, into: &followUps)
                } else {
                    onEvent(.initiated(connectionInfo))
                }
            case .enableEncryption(let context, let replay):
                secure.context.withLock { $0 = context }
                encryptionEnabledAt = clock.now
                for body in replay {
                    receive(body, into: &followUps)
                }
            case .connected:
                let terms = machine.terms
                sender.awaitAcknowledgements(terms.awaitsPayloadAcks)
                sink.acknowledge(Set([PayloadKind.bytes, .file, .stream].filter(terms.acknowledges)))
                sink.keepResumeRecords(key: terms.resumes ? terms.reconnectKey : nil)
                logger.debug("link terms", metadata: [
                    "peer_safe_to_disconnect_version": "\(terms.peerVersion)",
                    "shared_features": "\(terms.sharedFeatures.rawValue)"])
                if restarting {
                    restartedConnectionUp()
                    continue
                }
                wasConnected = true
                arm(deadlines.decided())
                reachedConnected.withLock { $0 = true }
                logger.info("connected")
                if let info { onEvent(.connected(info)) }
                followUps.append(.upgradeConnected)
            case .rejected where restarting:
                end(NearbyError(.connectionRejected, "the restarted peer rejected the reconnection"))
            case .rejected(let byPeer):
                arm(deadlines.decided())
                logger.info("connection rejected", metadata: ["by_peer": "\(byPeer)"])
                onEvent(.rejected(endpointID: endpointIDValue ?? "", byPeer: byPeer))
                end(nil, closeDelay: byPeer ? .zero : timeouts.rejectedCloseDelay, report: false)
            case .deliver(let transfer):
                sink.receive(transfer, host: self, into: &followUps)
            case .upgrade(let negotiation):
                logger.debug("bandwidth upgrade frame", metadata: ["type": "\(negotiation.eventType)"])
                followUps.append(.upgrade(negotiation))
            case .peerDisconnected, .disconnectAcknowledged:
                end(nil)
            case .peerLeaving:
                peerIsLeaving()
            case .reconnectIntroduction(let introduction):
                followUps.append(.handOver(introduction))
            case .resume(let frame):
                receiveResume(frame, into: &followUps)
            case .fail(let error):
                // A violation ends the connection for good. Say so with a plain DISCONNECTION before closing: a
                // swift-nearby peer would otherwise take the close for a broken link, reconnect and resume the very
                // payload that was refused (a Quick Share receiver refusing a climbing file name did, in a loop).
                if wasConnected { writer.post(writer.item(OfflineFrames.disconnection())) }
                end(error)
            }
        }
    }

    /// Awaits what a decision left to wait for, in order. Each step runs only while the session goes on, except
    /// stream deliveries, which a failed stream lets through at once.
    func complete(_ followUps: [FollowUp]) async {
        var roomAwaited = false
        for followUp in followUps {
            switch followUp {
            case .writerRoom:
                guard !roomAwaited, !ended else { continue }
                roomAwaited = true
                await writer.waitForRoom()
            case .admission(let id, let nonce):
                guard !ended, let admission else { continue }
                if await !admission(self, id, nonce), !ended {
                    // Closed before the handshake, as Google's advertiser does. Not reported: the app never saw
                    // this request, and its endpoint ID may belong to a connection that goes on (a tie-break).
                    end(NearbyError(.connectionRejected, "incoming request from \(id) refused"), report: false)
                }
            case .stream(let delivery):
                await deliver(delivery)
            case .upgradeConnected:
                guard !ended else { continue }
                await upgrade.connected(host: self, logger: logger)
            case .upgrade(let negotiation):
                guard !ended else { continue }
                await upgrade.receive(negotiation, host: self)
            case .handOver(let introduction):
                await handOver(introduction)
            }
        }
    }

    /// The first frame on this (incoming) channel introduced a reconnect: the channel goes to the session of the
    /// endpoint it names, which runs the handshake; this session ends without a report and without closing it.
    private func handOver(_ introduction: ProtoAutoReconnectFrame) async {
        let channel = readChannel
        releasesChannel = true
        end(nil, report: false)
        let target = await reconnectTarget?(introduction.endpointID)
        if let target, await target.takeReconnect(channel) { return }
        logger.notice("refusing a reconnect: no endpoint to reconnect", metadata: [
            "endpoint_id": "\(introduction.endpointID)"])
        await channel.close()
    }

    /// Hands a stream chunk or its end to the app; the read loop waits while the app takes its time (no buffer
    /// in between), with the keep-alive timeout suspended meanwhile.
    private func deliver(_ delivery: StreamDelivery) async {
        switch delivery {
        case .chunk(let stream, let bytes):
            guard !ended else { return }
            deadlines.streamDelivery(started: true, at: clock.now)
            await stream.send(bytes)
            deadlines.streamDelivery(started: false, at: clock.now)
        case .finish(let stream):
            stream.finish()
        }
    }
}

/// What a decision of the session leaves to wait for once all of its actions were performed.
enum FollowUp: Sendable {
    /// Wait while the writer's backlog is full (frames the peer provoked were posted).
    case writerRoom
    /// Ask the engine whether an incoming request may go on (strategy, duplicates, tie-break).
    case admission(endpointID: String, nonce: Int32)
    /// Hand a stream chunk or its end to the app.
    case stream(StreamDelivery)
    /// Tell the upgrade coordinator both sides accepted.
    case upgradeConnected
    /// Hand a bandwidth upgrade frame to the upgrade coordinator.
    case upgrade(ProtoBandwidthUpgradeNegotiationFrame)
    /// Hand this channel over to the endpoint its AUTO_RECONNECT introduction names.
    case handOver(ProtoAutoReconnectFrame)
}

/// A step of an incoming stream for the app, in the order the peer sent it.
enum StreamDelivery: Sendable {
    /// Bytes of the stream.
    case chunk(AsyncThrowingChannel<[UInt8], any Error>, [UInt8])
    /// The stream ended normally.
    case finish(AsyncThrowingChannel<[UInt8], any Error>)
}

extension EndpointSession: IncomingPayloadHost {
    var peerEndpointID: String { endpointIDValue ?? "" }

    func sendControl(_ frame: ProtoOfflineFrame) {
        writer.post(writer.item(frame))
    }

    func peerControlledOutgoing(
        _ id: PayloadID, event: ProtoPayloadTransferFrame.ControlMessage.EventType, reason: String?
    ) {
        if event == .payloadError, sender.isSending(id) {
            // Before the sender hears of it, so the reason comes ahead of the payload's `failure` update.
            let error = NearbyError(.endpointIoError, "the receiver failed the payload: \(reason ?? "no reason given")")
            onEvent(.payloadFailed(endpointID: peerEndpointID, payloadID: id, reason: error, isOutgoing: true))
        }
        sender.peerControl(id, event: event)
    }

    func payloadViolation(_ error: NearbyError) {
        end(error)
    }

    func peerAcknowledgedOutgoing(_ id: PayloadID) {
        sender.acknowledged(id)
    }
}

extension EndpointSession: UpgradeHost {
    var peerUpgradeMediums: [MediumKind] { machine.peerUpgradeMediums }

    func upgradeFailed(_ error: NearbyError) async {
        end(error)
    }

    func adoptUpgradedChannel(_ next: any EndpointChannel) async -> any EndpointChannel {
        let prior = readChannel
        readChannel = next
        sender.chunkSize.withLock { $0 = next.medium.maxTransmitPacketSize }
        info?.medium = next.medium
        logger[metadataKey: "medium"] = "\(next.medium)"
        logger[metadataKey: "peer"] = "\(next.peerDescription)"
        logger.info("bandwidth upgrade done", metadata: ["from": "\(prior.medium)"])
        onEvent(.mediumChanged(endpointID: endpointID ?? "", medium: next.medium))
        return prior
    }
}
