import Foundation

/// A value shared between tasks and threads outside an actor, reachable only with its lock held.
///
/// Use it where the standard library's `Synchronization.Mutex` would do; it has the same `withLock` shape. On
/// Linux, `Mutex` is a futex that ThreadSanitizer cannot see, so every access under it is reported as a data race
/// and a TSan run (`scripts/sanitize.sh thread`) drowns in false reports. This lock is an `NSLock` (a pthread
/// mutex), whose lock and unlock TSan intercepts, so only real races are reported. See docs/SANITIZERS.md.
public final class LockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Wraps `value`.
    public init(_ value: sending Value) {
        self.value = value
    }

    /// Runs `body` with the lock held and exclusive access to the value; returns what `body` returns.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
