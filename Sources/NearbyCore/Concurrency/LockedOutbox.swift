import Foundation

/// A value behind a lock, plus an outbox of call-outs that run after the lock is released, in the order they were
/// posted, one at a time.
///
/// This is how state that must notify others follows the lock rule (docs/ARCHITECTURE.md, "The lock rule"): decide
/// under the lock and post the call-outs (a continuation's `yield`, `resume` or `finish`, a handler, a log line) to
/// the outbox; they run once the lock is free. Posting in the same critical section as the state change keeps the
/// call-outs in the order of the changes, even when several threads change the state at once: whoever posts while
/// nobody is draining drains the outbox (its own call-outs and any posted meanwhile) until it is empty, and a thread
/// that posts while another drains leaves its call-outs to that drainer and returns.
///
/// So a call-out may run on another thread than the one that posted it, and after `withLock` returned; it must not
/// wait for the poster. A call-out may post again (to this outbox or another): that never deadlocks.
package final class LockedOutbox<Value>: @unchecked Sendable {
    /// The call-outs a critical section posts.
    package struct Outbox {
        fileprivate var items: [@Sendable () -> Void] = []

        /// Posts `callout`, to run after the lock is released.
        package mutating func post(_ callout: @escaping @Sendable () -> Void) {
            items.append(callout)
        }

        /// Whether nothing was posted.
        package var isEmpty: Bool { items.isEmpty }
    }

    private struct Guarded {
        var value: Value
        var pending: [@Sendable () -> Void] = []
        var draining = false
    }

    private let lock = NSLock()
    private var guarded: Guarded

    /// Wraps `value`.
    package init(_ value: sending Value) {
        guarded = Guarded(value: value)
    }

    /// Runs `body` with the lock held and exclusive access to the value; the call-outs it posts run after the lock
    /// is released (see the type's discussion). Returns what `body` returns.
    package func withLock<Result>(_ body: (inout Value, inout Outbox) -> Result) -> Result {
        var outbox = Outbox()
        lock.lock()
        let result = body(&guarded.value, &outbox)
        var drain = false
        if !outbox.items.isEmpty {
            guarded.pending.append(contentsOf: outbox.items)
            if !guarded.draining {
                guarded.draining = true
                drain = true
            }
        }
        lock.unlock()
        if drain { drainPending() }
        return result
    }

    /// Runs `body` with the lock held, for reads and changes that notify nobody.
    package func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&guarded.value)
    }

    private func drainPending() {
        while true {
            lock.lock()
            let batch = guarded.pending
            guarded.pending = []
            if batch.isEmpty { guarded.draining = false }
            lock.unlock()
            if batch.isEmpty { return }
            for callout in batch { callout() }
        }
    }
}
