import Logging
import NearbyCore
import NearbyWire

/// One running BLE discovery: feeds advertising reports and timer expiries to a ``BLEDiscoveryTracker`` and
/// performs its actions, yielding events and sleeping one timer per tracked address on the injected clock.
///
/// Reports (from the scan) and timers (from their own tasks) arrive concurrently; both pass through the tracker
/// under one lock, which posts the events and the timers' starts and stops to its outbox (the lock rule,
/// docs/ARCHITECTURE.md): they run after the lock is released, in the order the tracker made them.
package final class BLEDiscoveryRun: Sendable {
    private struct State {
        var tracker: BLEDiscoveryTracker
        /// One timer per tracked address; this run cancels it when it is replaced and in ``stop()``.
        var timers: [BLEAddress: TimerTask] = [:]
        var stopped = false
    }

    private let state: LockedOutbox<State>
    private let clock: NearbyClock
    private let events: AsyncThrowingStream<DiscoveryEvent, any Error>.Continuation
    private let logger: Logger

    /// Creates a run that yields to `events`.
    package init(
        tracker: BLEDiscoveryTracker, clock: NearbyClock,
        events: AsyncThrowingStream<DiscoveryEvent, any Error>.Continuation, logger: Logger
    ) {
        self.state = LockedOutbox(State(tracker: tracker))
        self.clock = clock
        self.events = events
        self.logger = logger
    }

    /// An advertising report arrived.
    package func receive(_ report: AdvertisingReport) {
        state.withLock { state, outbox in
            guard !state.stopped else { return }
            let actions = state.tracker.observe(report, now: clock.now, logger: logger)
            perform(actions, in: &state, outbox: &outbox)
        }
    }

    /// Cancels every timer; later reports and expiries are ignored.
    package func stop() {
        let timers = state.withLock { state -> [TimerTask] in
            state.stopped = true
            defer { state.timers = [:] }
            return Array(state.timers.values)
        }
        for timer in timers { timer.cancel() }
    }

    private func timerFired(for address: BLEAddress, timer: TimerTask) {
        state.withLock { state, outbox in
            guard !state.stopped else { return }
            // The tracker ignores a stale expiry; only the current timer's entry is forgotten.
            if state.timers[address] === timer { state.timers[address] = nil }
            let actions = state.tracker.timerFired(for: address, now: clock.now)
            perform(actions, in: &state, outbox: &outbox)
        }
    }

    /// Decides under the lock; the yields and the timers' starts and stops go to `outbox`.
    private func perform(
        _ actions: [BLEDiscoveryTracker.Action], in state: inout State,
        outbox: inout LockedOutbox<State>.Outbox
    ) {
        for action in actions {
            switch action {
            case .report(let event):
                let events = self.events
                outbox.post { events.yield(event) }
            case .startTimer(let address, let delay):
                let clock = self.clock
                let replaced = state.timers[address]
                let timer = TimerTask()
                state.timers[address] = timer
                outbox.post {
                    replaced?.cancel()
                    // Owner: `state.timers`; a replacing timer and `stop()` cancel it; it ends when its sleep ends
                    // or is cancelled.
                    timer.start { [weak self] in
                        do {
                            try await clock.sleep(for: delay)
                        } catch {
                            return
                        }
                        self?.timerFired(for: address, timer: timer)
                    }
                }
            }
        }
    }
}
