import Logging
import NearbyWire

/// Leaving a connection (safe-to-disconnect, docs/LINK-SAFETY.md): with a peer at `safe_to_disconnect_version`
/// ≥ 1 the side that leaves asks the peer to confirm it read everything before the request and closes once it
/// has (or after ``Timeouts/safeDisconnectAck``); the peer confirms and closes once we do (or after
/// ``Timeouts/peerLeavingClose``). With a version-0 peer the goodbye is the legacy one: no flags, 500 ms, close.
extension EndpointSession {
    /// The timers of the connection's end and of reconnecting.
    enum LinkTimer: Hashable, Sendable {
        /// Our safe disconnect gives up waiting for the peer's ack.
        case disconnectAck
        /// While our safe disconnect waits: is a write stuck (the peer stopped reading)?
        case leaveStall
        /// The peer we confirmed did not close the channel: we close it.
        case peerLeaving
        /// Auto-reconnect: the window for a new channel passed.
        case reconnectWindow
    }

    /// Says goodbye and closes the connection. With a peer at `safe_to_disconnect_version` ≥ 1 it returns once
    /// the peer confirmed it read everything we sent (or after ``Timeouts/safeDisconnectAck``), so nothing in
    /// flight is lost on a slow link; then, as with every other peer, once the channel is closed, and always
    /// within ``disconnectReturnBound`` of that: a peer that stopped reading cannot hold it (the goodbye is queued
    /// without waiting, and the channel is closed under a stuck write in the background).
    public func disconnect() async {
        if !ended, reconnecting {
            // No channel to say goodbye on.
            end(nil)
        }
        if !ended {
            let (actions, isSafe) = machine.leave()
            var followUps: [FollowUp] = []
            perform(actions, fromApp: true, into: &followUps)
            if isSafe, !ended {
                let bound = timeouts.safeDisconnectAck
                linkTimers.schedule(.disconnectAck, after: bound) { [weak self] generation in
                    await self?.linkTimerFired(.disconnectAck, generation: generation)
                }
                scheduleLeaveStallCheck()
                logger.debug("asked the peer to confirm the disconnect")
                await complete(followUps)
                await waitUntilEnded()
            } else {
                if !ended { end(nil, closeDelay: timeouts.disconnectDelay) }
                await complete(followUps)
            }
        }
        if let closeTask { await Self.wait(for: closeTask, atMost: Self.disconnectReturnBound, on: clock) }
    }

    /// How long one write may be stuck while a safe disconnect waits for the peer's ack before the channel is
    /// closed at once: a peer that stopped reading will never ack, and `disconnect()` must not wait for it.
    static let leaveStallBound: Duration = .seconds(2)

    private func scheduleLeaveStallCheck() {
        linkTimers.schedule(.leaveStall, after: .milliseconds(500)) { [weak self] generation in
            await self?.linkTimerFired(.leaveStall, generation: generation)
        }
    }

    /// Returns once the session ended (at once if it has).
    func waitUntilEnded() async {
        if ended { return }
        await withCheckedContinuation { endWaiters.append($0) }
    }

    /// The peer asked for a safe disconnect and our ack is queued: the read loop goes on until the peer closes the
    /// channel, bounded by ``Timeouts/peerLeavingClose``.
    func peerIsLeaving() {
        peerLeaving = true
        logger.debug("the peer leaves; waiting for it to close the channel")
        linkTimers.schedule(.peerLeaving, after: timeouts.peerLeavingClose) { [weak self] generation in
            await self?.linkTimerFired(.peerLeaving, generation: generation)
        }
    }

    func linkTimerFired(_ timer: LinkTimer, generation: UInt64) {
        guard !ended, linkTimers.claim(timer, generation: generation) else { return }
        switch timer {
        case .disconnectAck:
            logger.notice("the peer did not confirm the disconnect within \(timeouts.safeDisconnectAck); closing")
            end(nil)
        case .peerLeaving:
            end(nil)
        case .leaveStall:
            if let since = writer.writeInProgressSince, clock.now - since >= Self.leaveStallBound {
                logger.notice("the peer stopped reading while we were leaving; closing")
                end(nil, closeAtOnce: true)
            } else {
                scheduleLeaveStallCheck()
            }
        case .reconnectWindow:
            reconnectWindowPassed()
        }
    }
}
