import NearbyCore

/// At most one running timer per key, each a task sleeping on a `NearbyClock`: the part of a subscription or a
/// publication that performs its trackers' "start timer / cancel timer" actions.
///
/// A value kept under the owner's lock (a `LockedOutbox`), so that the timers of one tracker step are decided in
/// the order the step returned them, and generations are exact. It starts and cancels no task itself (the lock
/// rule, docs/ARCHITECTURE.md): ``start(_:after:on:fire:)``, ``cancel(_:)`` and ``stopAll()`` return the call-out
/// that does it, which the owner posts to its outbox to run after the lock is released. When a timer's sleep ends,
/// it calls `fire` with its key and generation; the owner then calls ``fired(_:generation:)`` under its lock, which
/// says whether that timer is still the current one (a timer replaced or cancelled meanwhile is stale and must be
/// ignored).
package struct KeyedTimers<Key: Hashable & Sendable>: Sendable {
    private var running: [Key: (generation: UInt64, timer: TimerTask)] = [:]
    private var generation: UInt64 = 0

    package init() {}

    /// Starts the timer of `key` (replacing the one it has): after `delay` on `clock`, `fire(key, generation)`.
    /// - Returns: the call-out that starts it and stops the one it replaces; post it to run after the lock.
    package mutating func start(
        _ key: Key, after delay: Duration, on clock: NearbyClock,
        fire: @escaping @Sendable (_ key: Key, _ generation: UInt64) -> Void
    ) -> @Sendable () -> Void {
        generation += 1
        let current = generation
        let replaced = running[key]?.timer
        let timer = TimerTask()
        running[key] = (current, timer)
        return {
            replaced?.cancel()
            timer.start {
                do {
                    try await clock.sleep(for: delay)
                } catch {
                    return
                }
                fire(key, current)
            }
        }
    }

    /// Cancels the timer of `key`, if any.
    /// - Returns: the call-out that cancels it; post it to run after the lock.
    package mutating func cancel(_ key: Key) -> @Sendable () -> Void {
        let timer = running.removeValue(forKey: key)?.timer
        return { timer?.cancel() }
    }

    /// Cancels every timer.
    /// - Returns: the call-out that cancels them; post it to run after the lock.
    package mutating func stopAll() -> @Sendable () -> Void {
        let timers = running.values.map(\.timer)
        running = [:]
        return { for timer in timers { timer.cancel() } }
    }

    /// The timer of `key` started as `generation` has fired: whether it is still current (it is then forgotten).
    package mutating func fired(_ key: Key, generation: UInt64) -> Bool {
        guard running[key]?.generation == generation else { return false }
        running[key] = nil
        return true
    }
}
