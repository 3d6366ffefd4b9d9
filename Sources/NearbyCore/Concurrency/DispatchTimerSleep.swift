import Dispatch

/// A sleep on a Dispatch timer that cancellation disarms and frees at once: the production sleep of
/// ``NearbyClock`` (``NearbyClock/continuous``).
///
/// On Linux, a cancelled `Task.sleep` throws at once, but the Dispatch timer behind it stays armed, holding the
/// sleep's job, until the original deadline. The engine cancels most of its timers long before they fire
/// (keep-alive and decision deadlines re-armed on every frame, watchdogs of steps that ended), so each connection
/// left a trail of dead timers behind; the lifecycle stress test showed resident memory growing ~3 KiB per cycle,
/// linearly, through 20,000 cycles, and heaptrack counted ~38 live `Task.sleep` allocations per cycle at exit.
/// Here a cancellation cancels the timer source itself, which releases it and its handler.
///
/// The timer counts `DispatchTime` (the monotonic clock): after the machine was suspended it fires later, never
/// earlier, than `ContinuousClock` would.
package enum DispatchTimerSleep {
    /// Runs the timers' handlers, which only hand the wake-up to the sleeping task.
    private static let queue = DispatchQueue(label: "nearby.timers")

    /// What a cancellation has to stop: the armed timer and the waiting task's resumer.
    private struct Armed {
        var timer: (any DispatchSourceTimer)?
        var resumer: HandoffResumer<Void>?
        var cancelled = false
    }

    /// Suspends for `duration`; throws `CancellationError` at once when the task is (or gets) cancelled, and the
    /// timer is gone then.
    /// - Parameter armed: called with the timer once it is armed (tests watch it go away).
    package static func sleep(for duration: Duration, armed observe: (@Sendable (AnyObject) -> Void)? = nil) async throws {
        try Task.checkCancellation()
        let armed = LockedValue(Armed())
        try await withTaskCancellationHandler {
            try await withHandoffContinuation { (resumer: HandoffResumer<Void>) in
                let timer = DispatchSource.makeTimerSource(queue: queue)
                timer.schedule(deadline: deadline(after: duration))
                // The handler holds the timer until the timer is cancelled, which releases the handler.
                timer.setEventHandler {
                    resumer.resume(returning: ())
                    timer.cancel()
                }
                let cancelledAlready = armed.withLock { armed -> Bool in
                    guard !armed.cancelled else { return true }
                    armed.timer = timer
                    armed.resumer = resumer
                    return false
                }
                // Activated either way: Dispatch must not release a source that was never activated.
                timer.activate()
                observe?(timer as AnyObject)
                if cancelledAlready {
                    timer.cancel()
                    resumer.resume(throwing: CancellationError())
                }
            }
        } onCancel: {
            let (timer, resumer) = armed.withLock { armed in
                armed.cancelled = true
                defer { (armed.timer, armed.resumer) = (nil, nil) }
                return (armed.timer, armed.resumer)
            }
            timer?.cancel()
            // Only the first result counts (HandoffResumer): a timer that fired meanwhile wins.
            resumer?.resume(throwing: CancellationError())
        }
    }

    /// `duration` from now; durations beyond any real wait (over 100 years) never fire.
    static func deadline(after duration: Duration) -> DispatchTime {
        let (seconds, attoseconds) = duration.components
        guard seconds < 100 * 365 * 86_400 else { return .distantFuture }
        let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds / 1_000_000_000)
        return .now() + .nanoseconds(Int(nanoseconds))
    }
}
