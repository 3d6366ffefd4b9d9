/// A one-shot signal: ``wait()`` returns once ``signal()`` was called (at once if it was already).
package final class CompletionSignal: Sendable {
    private struct State {
        var signalled = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedValue(State())

    package init() {}

    /// Wakes every waiter, now and later.
    package func signal() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.signalled = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once ``signal()`` was called.
    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.signalled { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}
