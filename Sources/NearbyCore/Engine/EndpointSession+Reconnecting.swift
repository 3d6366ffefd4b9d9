import Logging
import NearbySecurity
import NearbyWire

/// Auto-reconnect and auto-resume (docs/LINK-SAFETY.md): between two swift-nearby peers, a connected endpoint
/// whose channel breaks without a goodbye stays up for ``Timeouts/autoReconnectWindow``: the side that connected
/// opens a new channel and runs the ``ReconnectHandshake`` on it, the other side checks it against the old
/// connection, and both carry on with the same endpoint ID; each side then asks the receiver of each payload it was
/// sending where it goes on (AUTO_RESUME), and sends from there.
extension EndpointSession {
    /// Whether a channel breaking now is ridden out rather than ending the connection.
    var canReconnect: Bool {
        !ended && machine.isConnected && machine.terms.reconnects && timeouts.autoReconnectWindow > .zero
            && !peerLeaving && !upgrade.isDraining
    }

    /// The channel broke (end of stream or a read error without a goodbye, a failed or stalled write, silence):
    /// the connection waits for a new channel when it can, and ends otherwise.
    func channelBroke(_ error: NearbyError, closeAtOnce: Bool = false) {
        guard !ended, !reconnecting else { return }
        guard canReconnect else {
            end(error, closeAtOnce: closeAtOnce)
            return
        }
        enterReconnecting(error)
    }

    /// A write failed. Ignored once the writer writes on a new channel (the failure was the broken one's).
    func writerFailed(_ error: NearbyError) {
        guard writer.failure != nil else { return }
        channelBroke(error)
    }

    private func enterReconnecting(_ error: NearbyError) {
        reconnecting = true
        reconnectCause = error
        channelGeneration += 1
        gate.close()
        sender.suspend()
        arm(deadlines.linkBroke())
        awaitingResume = []
        let broken = readChannel
        let writing = writer.channel
        let window = timeouts.autoReconnectWindow
        logger.notice("the link broke; reconnecting", metadata: ["error": "\(error)", "window": "\(window)"])
        onEvent(.reconnecting(endpointID: peerEndpointID, error: error))
        linkTimers.schedule(.reconnectWindow, after: window) { [weak self] generation in
            await self?.linkTimerFired(.reconnectWindow, generation: generation)
        }
        reconnectTask?.cancel()
        // Owner: this session (`reconnectTask`): `end()` and the next reconnect cancel it; it ends once a new channel
        // is adopted, the window passed (`end()`), or it is cancelled (`seekChannel` stops between attempts).
        reconnectTask = Task { [weak self] in
            await broken.close()
            await writing.close()
            await self?.seekChannel()
        }
    }

    /// The window passed without a new channel.
    func reconnectWindowPassed() {
        guard reconnecting else { return }
        let cause = reconnectCause.map { " (\($0.message))" } ?? ""
        end(NearbyError(
            .timeout, "the link broke\(cause) and did not come back within \(timeouts.autoReconnectWindow)",
            cause: reconnectCause))
    }

    /// The read loop waits here while reconnecting.
    func waitForChannel() async {
        guard reconnecting, !ended else { return }
        await withCheckedContinuation { channelWaiter = $0 }
    }

    /// The side that connected: opens new channels until one completes the handshake or the window passes. A peer
    /// that refuses the introduction (its process restarted, so it holds no such endpoint) gets a new connection
    /// instead, which its app accepts or not, and on which payloads resume from the partial files it kept.
    private func seekChannel() async {
        guard isOutgoing, let reconnectChannel, let key = machine.terms.reconnectKey else { return }
        var pause = Duration.milliseconds(100)
        while reconnecting, !ended, !Task.isCancelled {
            do {
                let channel = try await reconnectChannel()
                do {
                    let context = try await ReconnectHandshake.client(
                        on: channel, endpointID: localEndpointID, peerEndpointID: peerEndpointID, key: key,
                        within: timeouts.handshake, clock: clock)
                    await adopt(channel, context: context)
                    return
                } catch is ReconnectHandshake.Refused {
                    await channel.close()
                    logger.info("the peer no longer knows this connection (restarted?); connecting anew")
                    let fresh = try await reconnectChannel()
                    await beginFreshConnection(on: fresh)
                    return
                } catch {
                    await channel.close()
                    throw error
                }
            } catch {
                logger.debug("reconnect attempt failed", metadata: ["error": "\(error)"])
            }
            try? await clock.sleep(for: pause)
            pause = min(pause * 2, .seconds(1))
        }
    }

    /// The side that was connected to: a new channel introduced itself for this endpoint. Runs the handshake on it
    /// unless the endpoint cannot reconnect or a handshake is under way; returns whether it took the channel
    /// (otherwise the caller closes it).
    func takeReconnect(_ channel: any EndpointChannel) -> Bool {
        guard !ended, wasConnected, machine.isConnected, let key = machine.terms.reconnectKey,
            timeouts.autoReconnectWindow > .zero, reconnectHandshakeTask == nil
        else { return false }
        let endpointID = localEndpointID
        let timeout = timeouts.handshake
        let clock = self.clock
        // Owner: this session (`reconnectHandshakeTask`): `end()` cancels it; it ends within the handshake timeout
        // (its deadline closes the channel then), and `adopt` or `reconnectRefused` clears the handle.
        reconnectHandshakeTask = Task { [weak self] in
            do {
                let context = try await ReconnectHandshake.server(
                    on: channel, endpointID: endpointID, key: key, within: timeout, clock: clock)
                guard let self else {
                    await channel.close()
                    return
                }
                await self.adopt(channel, context: context)
            } catch {
                await channel.close()
                await self?.reconnectRefused(error, channel: channel)
            }
        }
        return true
    }

    private func reconnectRefused(_ error: any Error, channel: any EndpointChannel) {
        reconnectHandshakeTask = nil
        logger.notice(
            "refused a channel that claimed this endpoint", metadata: ["peer": "\(channel.peerDescription)", "error": "\(error)"])
    }

    /// A new channel passed the handshake: read and write there from now on, and resume the payloads in flight.
    private func adopt(_ channel: any EndpointChannel, context: D2DSecureChannel) async {
        reconnectHandshakeTask = nil
        guard !ended, machine.isConnected else {
            await channel.close()
            return
        }
        // The peer noticed first (a half-open channel here): the old channel goes now.
        if !reconnecting { enterReconnecting(NearbyError(.endpointIoError, "the peer reconnected on a new channel")) }
        channelGeneration += 1
        readChannel = channel
        // Everything queued for the broken channel is written there or dropped before the writer moves.
        await writer.revive(on: channel, context: context)
        guard !ended else { return }
        reconnecting = false
        reconnectTask?.cancel()
        reconnectTask = nil
        linkTimers.cancel(.reconnectWindow)
        arm(deadlines.reconnected(now: clock.now))
        encryptionEnabledAt = clock.now
        peerSentEncrypted = true
        sender.chunkSize.withLock { $0 = channel.medium.maxTransmitPacketSize }
        info?.medium = channel.medium
        logger[metadataKey: "medium"] = "\(channel.medium)"
        logger[metadataKey: "peer"] = "\(channel.peerDescription)"
        logger.info("reconnected")
        onEvent(.reconnected(endpointID: peerEndpointID, medium: channel.medium))
        channelWaiter?.resume()
        channelWaiter = nil
        startResuming()
    }

    /// A new connection to a peer whose process restarted: the same endpoints, a new request and handshake on
    /// `channel`; our side accepts by itself, the peer's app decides. Payloads resume once it is up.
    private func beginFreshConnection(on channel: any EndpointChannel) async {
        guard reconnecting, !ended, let fresh = machine.restarted(on: channel.medium) else {
            await channel.close()
            return
        }
        restarting = true
        machine = fresh
        channelGeneration += 1
        readChannel = channel
        await writer.revive(on: channel, context: nil)
        guard !ended else { return }
        reconnecting = false
        reconnectTask = nil
        peerSentEncrypted = false
        encryptionEnabledAt = nil
        arm(deadlines.start(outgoing: true))
        channelWaiter?.resume()
        channelWaiter = nil
        await perform(machine.start())
    }

    /// The new connection to a restarted peer is up: the endpoint carries on, as after a reconnect.
    func restartedConnectionUp() {
        restarting = false
        linkTimers.cancel(.reconnectWindow)
        arm(deadlines.decided())
        sender.chunkSize.withLock { $0 = readChannel.medium.maxTransmitPacketSize }
        logger.info("reconnected on a new connection")
        onEvent(.reconnected(endpointID: peerEndpointID, medium: readChannel.medium))
        startResuming()
    }

    /// Asks the receiver of every payload we were sending where it goes on; payload senders wait at the gate until
    /// every answer is in. A peer that does not resume (a restarted peer with auto-reconnect off) gets none: the
    /// payloads fail, the connection goes on.
    private func startResuming() {
        guard machine.terms.resumes else {
            sender.unsuspend()
            sender.abandonUnfinished()
            gate.open()
            return
        }
        let pending = sender.unfinishedPayloadIDs()
        sender.unsuspend()
        awaitingResume = Set(pending)
        payloadKeys = payloadKeys.filter { pending.contains($0.key) }
        for id in pending {
            let token = (payloadKeys[id] ?? machine.terms.reconnectKey).map { ResumableFiles.token(key: $0, payloadID: id) }
            writer.post(writer.item(OfflineFrames.autoResume(.payloadResumeTransferStart, payloadID: id, resumeToken: token)))
        }
        if pending.isEmpty { gate.open() }
        logger.debug("resuming payloads", metadata: ["count": "\(pending.count)"])
    }

    /// An AUTO_RESUME frame: a START asks where a payload the peer sends us goes on; an ACK says where ours does.
    func receiveResume(_ frame: ProtoAutoResumeFrame, into followUps: inout [FollowUp]) {
        let id = frame.pendingPayloadID
        switch frame.eventType {
        case .payloadResumeTransferStart:
            let point = sink.resumePoint(
                for: id, token: frame.hasResumeToken ? Array(frame.resumeToken) : nil, host: self)
            logger.debug("the peer resumes a payload", metadata: [
                "payload_id": "\(id)", "outcome": "\(point.outcome)", "offset": "\(point.offset)"])
            writer.post(writer.item(OfflineFrames.autoResume(
                .payloadResumeTransferAck, payloadID: id, nextChunkIndex: point.index, nextOffset: point.offset,
                outcome: point.outcome)))
            followUps.append(.writerRoom)
        case .payloadResumeTransferAck:
            guard awaitingResume.remove(id) != nil else { return }
            sender.resume(id, outcome: frame.resumeOutcome, offset: frame.nextPayloadOffset, index: frame.nextPayloadChunkIndex)
            if awaitingResume.isEmpty { gate.open() }
        default:
            break
        }
    }
}
