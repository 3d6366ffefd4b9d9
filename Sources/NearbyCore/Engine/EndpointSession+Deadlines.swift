import Logging
import NearbyWire

/// Time and the end: the session arms the timers its ``SessionDeadlines`` ask for on its clock, acts on those
/// that fire, and ends the connection.
extension EndpointSession {
    /// Arms and disarms timers as the deadlines asked.
    func arm(_ actions: [SessionDeadlines.Action]) {
        for action in actions {
            switch action {
            case .schedule(let timer, let delay):
                timers.schedule(timer, after: delay) { [weak self] generation in
                    await self?.timerFired(timer, generation: generation)
                }
            case .cancel(let timer):
                timers.cancel(timer)
            }
        }
    }

    private func timerFired(_ timer: SessionDeadlines.Timer, generation: UInt64) async {
        guard !ended, timers.claim(timer, generation: generation) else { return }
        let writerStatus = SessionDeadlines.WriterStatus(
            lastWrite: writer.lastWriteInstant, writeStartedAt: writer.writeInProgressSince, isIdle: writer.isIdle,
            holdsKeepAlives: upgrade.isDraining)
        let (expiry, actions) = deadlines.fired(timer, now: clock.now, writer: writerStatus)
        arm(actions)
        switch expiry {
        case nil:
            break
        case .noConnectionRequest(let timeout):
            end(NearbyError(.timeout, "no connection request within \(timeout)"))
        case .handshake(let timeout):
            end(NearbyError(.timeout, "the handshake did not finish within \(timeout)"))
        case .decision:
            await decisionExpired()
        case .silence(let timeout):
            channelBroke(NearbyError(.timeout, "nothing heard from the peer for \(timeout)"))
        case .stalledWrite(let deadline):
            channelBroke(
                NearbyError(.timeout, "a write to the peer did not finish within \(deadline): the peer stopped reading"),
                closeAtOnce: true)
        case .sendKeepAlive:
            // Never waited for: a busy writer would not have been asked.
            let sequence = keepAliveSequence
            keepAliveSequence &+= 1
            writer.post(writer.item(OfflineFrames.keepAlive(ack: false, sequenceNumber: sequence)))
        }
    }

    /// Nobody decided within ``ResourceLimits/pendingDecisionTimeout``: we reject (the peer gets our rejection);
    /// if our app had accepted and the peer never answered, the connection fails with a timeout.
    private func decisionExpired() async {
        let timeout = limits.pendingDecisionTimeout
        let actions = machine.decide(accept: false)
        if !actions.isEmpty {
            logger.notice("no decision within \(timeout); rejecting")
            var followUps: [FollowUp] = []
            perform(actions, fromApp: true, into: &followUps)
            if !ended {
                // The peer has not decided either: our rejection is on its way; end as rejected by us.
                pendingRejection = false
                end(nil, closeDelay: timeouts.rejectedCloseDelay)
            }
            await complete(followUps)
        } else if machine.isAwaitingDecisions {
            writer.post(writer.item(OfflineFrames.disconnection()))
            end(NearbyError(.timeout, "the peer did not accept or reject within \(timeout)"),
                      closeDelay: timeouts.disconnectDelay)
        }
    }

    // MARK: - Ending

    /// Ends the session. With `closeAtOnce` (a write is stuck) the channel is closed before anything else, which
    /// fails the stuck write; otherwise queued frames get ``Timeouts/drainBeforeClose`` to go out.
    func end(_ error: NearbyError?, closeDelay: Duration = .zero, report: Bool = true, closeAtOnce: Bool = false) {
        guard !ended else { return }
        ended = true
        hasEnded.withLock { $0 = true }
        machine.close()
        timers.stop()
        linkTimers.stop()
        sender.stop()
        upgrade.stop()
        gate.open()
        let endpoint = endpointIDValue ?? ""
        if let error {
            logger.notice("connection ended", metadata: ["error": "\(error)"])
        }
        if report {
            if wasConnected {
                onEvent(.disconnected(endpointID: endpoint, error: error))
            } else if let byPeer = pendingRejection {
                logger.info("connection rejected", metadata: ["by_peer": "\(byPeer)"])
                onEvent(.rejected(endpointID: endpoint, byPeer: byPeer))
            } else {
                onEvent(.connectionFailed(
                    endpointID: endpointIDValue, error: error ?? NearbyError(.endpointIoError, "the connection closed")))
            }
        }
        sink.failAll(endpointID: endpoint, error: error)
        let waiters = endWaiters
        endWaiters = []
        for waiter in waiters { waiter.resume() }
        reconnectTask?.cancel()
        reconnectHandshakeTask?.cancel()
        channelWaiter?.resume()
        channelWaiter = nil
        let writer = self.writer
        let writerTask = self.writerTask
        let channel = self.readChannel
        let releasesChannel = self.releasesChannel
        let upgrade = self.upgrade
        let onEnd = self.onEnd
        let drainTimeout = timeouts.drainBeforeClose
        let clock = self.clock
        // Owner: this session (`closeTask`), whose `disconnect()` awaits it for at most `disconnectReturnBound`; it
        // ends once the writer ended (within `drainBeforeClose`: then the channel is closed under a stuck write),
        // `closeDelay` passed, the channels are closed and the upgrade released; `onEnd` then tells the engine.
        closeTask = Task {
            var drained = !closeAtOnce
            if closeAtOnce { await writer.channel.close() }
            if let writerTask {
                // A peer that stopped reading must not keep the socket open forever: after the bound, closing the
                // channel fails the write that is stuck, and the writer then reaches its end marker.
                // Owner: this close task, which cancels it once the writer ended and awaits its value; cancelled,
                // it ends at once.
                let cutoff = Task { () -> Bool in
                    try? await clock.sleep(for: drainTimeout)
                    if Task.isCancelled { return false }
                    await writer.channel.close()
                    return true
                }
                writer.finishAfterQueued()
                _ = await writerTask.value
                cutoff.cancel()
                if await cutoff.value { drained = false }
            }
            // Lingering for the peer to read our last frames is pointless when it stopped reading.
            if closeDelay > .zero, drained { try? await clock.sleep(for: closeDelay) }
            if !releasesChannel {
                await channel.close()
                await writer.channel.close()
            }
            await upgrade.release()
            onEnd(self)
        }
    }
}
