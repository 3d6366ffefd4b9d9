/// Where payload senders wait while a bandwidth upgrade holds writes.
package final class SendGate: Sendable {
    private struct State {
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedValue(State())

    /// Makes an open gate.
    package init() {}

    /// Returns once the gate is open (at once if it is).
    package func wait() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                guard state.closed else { return true }
                state.waiters.append(waiter)
                return false
            }
            if open { waiter.resume() }
        }
    }

    /// How many ``wait()``ers the closed gate holds now (tests wait for every sender to be at the gate).
    package var waiterCount: Int { state.withLock { $0.waiters.count } }

    /// Holds later ``wait()``ers until ``open()``.
    package func close() { state.withLock { $0.closed = true } }

    /// Lets every waiter go on.
    package func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = false
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
