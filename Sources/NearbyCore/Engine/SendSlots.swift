/// A first-come, first-served limit on how many payloads of one endpoint send at the same time: the payloads
/// holding a slot interleave chunk by chunk; later ones wait in order for a slot. It keeps the payloads a peer must
/// hold open well under its limit (ours: `ResourceLimits.maxConcurrentIncomingPayloads`, 64 by default) and the
/// chunks read ahead bounded, however many payloads an app starts at once.
package final class SendSlots: Sendable {
    private struct State {
        var free: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: LockedValue<State>

    /// Makes `count` slots (at least one).
    package init(count: Int) {
        state = LockedValue(State(free: max(1, count)))
    }

    /// Returns once the caller holds a slot; callers get slots in the order they asked.
    package func acquire() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                guard state.free > 0, state.waiters.isEmpty else {
                    state.waiters.append(waiter)
                    return false
                }
                state.free -= 1
                return true
            }
            if granted { waiter.resume() }
        }
    }

    /// Gives a slot back: the longest waiter gets it.
    package func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.free += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
