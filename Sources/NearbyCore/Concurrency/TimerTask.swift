/// One timer's task, started after the owner's lock is released (the lock rule, docs/ARCHITECTURE.md): the owner
/// makes the handle under its lock, where it decides, and calls ``start(_:)`` and ``cancel()`` after. Cancelled
/// before it started, it never runs.
package final class TimerTask: Sendable {
    private struct State {
        var task: Task<Void, Never>?
        var cancelled = false
    }

    private let state = LockedValue(State())

    package init() {}

    /// Starts `body` in a task of its own, unless cancelled already.
    package func start(_ body: @escaping @Sendable () async -> Void) {
        guard !state.withLock({ $0.cancelled }) else { return }
        // Owner: the timer table that made this handle (SessionTimers, KeyedTimers), which cancels it when the
        // timer is replaced or disarmed or the table stops; it ends when its sleep ends or is cancelled.
        let task = Task { await body() }
        let cancelledMeanwhile = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        if cancelledMeanwhile { task.cancel() }
    }

    /// Cancels the timer's task (now, or as soon as it starts).
    package func cancel() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}
