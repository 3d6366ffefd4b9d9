import Logging
import NearbyWire

/// Reading: frames from the peer go through the D2D context and the `ConnectionStateMachine`; the session
/// performs the machine's actions and hands payloads to the ``IncomingPayloadSink`` and negotiation frames to the
/// ``UpgradeCoordinator``.
extension EndpointSession {
    func handle(_ body: [UInt8]) async {
        deadlines.frameRead(at: clock.now)
        var plaintext = body
        if secure.isEnabled {
            do {
                plaintext = try secure.context.withLock { context throws(NearbyError) -> [UInt8] in
                    try context!.decode(body)
                }
                peerSentEncrypted = true
            } catch {
                // Peers may send a keep-alive in plaintext around the switch to encryption (§3.6): before their
                // first encrypted frame, and not long after ours.
                guard let frame = try? OfflineFrameParser.parse(body), case .keepAlive = frame else {
                    logger.debug("undecodable frame", metadata: [
                        "bytes": "\(body.count)", "head": "\(Hex.encode(Array(body.prefix(24))))",
                        "draining": "\(upgrade.isDraining)"])
                    await end(error)
                    return
                }
                let window = timeouts.plaintextKeepAliveWindow
                guard !peerSentEncrypted, let since = encryptionEnabledAt, clock.now - since < window else {
                    await end(NearbyError(
                        .invalidFrame,
                        "plaintext KEEP_ALIVE after the switch to encryption (tolerated only before the peer's first encrypted frame and within \(window))"))
                    return
                }
            }
        }
        await perform(machine.receive(plaintext))
    }

    /// Performs the state machine's actions. Frames go to the writer without waiting; those the peer provoked
    /// (`fromApp` false) wait once the writer's backlog is full, so a flooding peer that never reads is held back
    /// instead of growing the queue, while the app's decisions never wait.
    func perform(_ actions: [ConnectionStateMachine.Action], fromApp: Bool = false) async {
        // A rejection is the outcome even if the channel ends while the response is still being written (the
        // peer may read it and hang up before this loop gets to `.rejected`).
        for case .rejected(let byPeer) in actions { pendingRejection = byPeer }
        for action in actions where !ended {
            switch action {
            case .sendRaw(let bytes):
                if fromApp { writer.post(.plain(bytes)) } else { await writer.postBounded(.plain(bytes)) }
            case .sendFrame(let frame):
                if fromApp {
                    writer.post(writer.item(frame))
                } else if frame.v1.type == .keepAlive, frame.v1.keepAlive.ack, !writer.isIdle {
                    // A KEEP_ALIVE ack is skipped while other frames are on their way: they prove we are alive
                    // just as well, and a peer that floods KEEP_ALIVE and never reads cannot make acks pile up or
                    // hold our read loop.
                    continue
                } else {
                    await writer.postBounded(writer.item(frame))
                }
            case .requestReceived(let id, let nonce, let settings):
                setPeerEndpointID(id)
                let keepAlive = settings.clamped(timeoutTo: limits.peerKeepAliveTimeoutRange)
                if keepAlive != settings {
                    logger.notice("clamped the peer's keep-alive timeout", metadata: [
                        "asked": "\(settings.timeout)", "used": "\(keepAlive.timeout)"])
                }
                arm(deadlines.requestReceived(keepAlive: keepAlive))
                if let admission, await !admission(self, id, nonce) {
                    // Closed before the handshake, as Google's advertiser does. Not reported: the app never saw
                    // this request, and its endpoint ID may belong to a connection that goes on (a tie-break).
                    await end(NearbyError(.connectionRejected, "incoming request from \(id) refused"), report: false)
                }
            case .initiated(var connectionInfo):
                if let id = endpointIDValue { connectionInfo.endpointID = id }
                info = connectionInfo
                arm(deadlines.initiated(now: clock.now))
                logger.info("connection initiated", metadata: ["digits": "\(connectionInfo.verificationDigits)"])
                onEvent(.initiated(connectionInfo))
            case .enableEncryption(let context, let replay):
                secure.context.withLock { $0 = context }
                encryptionEnabledAt = clock.now
                for body in replay {
                    await handle(body)
                }
            case .connected:
                wasConnected = true
                arm(deadlines.decided())
                reachedConnected.withLock { $0 = true }
                logger.info("connected")
                if let info { onEvent(.connected(info)) }
                await upgrade.connected(host: self, logger: logger)
            case .rejected(let byPeer):
                arm(deadlines.decided())
                logger.info("connection rejected", metadata: ["by_peer": "\(byPeer)"])
                onEvent(.rejected(endpointID: endpointIDValue ?? "", byPeer: byPeer))
                await end(nil, closeDelay: byPeer ? .zero : timeouts.rejectedCloseDelay, report: false)
            case .deliver(let transfer):
                await sink.receive(transfer, host: self)
            case .upgrade(let negotiation):
                logger.debug("bandwidth upgrade frame", metadata: ["type": "\(negotiation.eventType)"])
                await upgrade.receive(negotiation, host: self)
            case .peerDisconnected:
                await end(nil)
            case .fail(let error):
                await end(error)
            }
        }
    }
}

extension EndpointSession: IncomingPayloadHost {
    var peerEndpointID: String { endpointIDValue ?? "" }

    func sendControl(_ frame: ProtoOfflineFrame) async {
        await writer.postBounded(writer.item(frame))
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

    func payloadViolation(_ error: NearbyError) async {
        await end(error)
    }

    func streamDelivery(started: Bool) {
        deadlines.streamDelivery(started: started, at: clock.now)
    }
}

extension EndpointSession: UpgradeHost {
    var peerUpgradeMediums: [MediumKind] { machine.peerUpgradeMediums }

    func upgradeFailed(_ error: NearbyError) async {
        await end(error)
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
