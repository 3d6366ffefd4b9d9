/// A FIFO mutual-exclusion gate for actor methods that await in the middle of a critical section.
///
/// A value type kept inside an actor: ``enter()`` returns `nil` when the caller may proceed at once, otherwise the
/// caller suspends until ``leave()`` hands the gate on.
struct AsyncGate: Sendable {
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Whether nobody holds or waits for the gate.
    var isIdle: Bool { !busy && waiters.isEmpty }

    /// Tries to enter; returns `false` when the caller must wait with ``enqueue(_:)``.
    mutating func tryEnter() -> Bool {
        if busy { return false }
        busy = true
        return true
    }

    /// Queues a waiter; it is resumed by ``leave()`` holding the gate.
    mutating func enqueue(_ waiter: CheckedContinuation<Void, Never>) {
        waiters.append(waiter)
    }

    /// Leaves the gate, handing it to the next waiter if any.
    mutating func leave() {
        if waiters.isEmpty {
            busy = false
        } else {
            waiters.removeFirst().resume()
        }
    }
}
