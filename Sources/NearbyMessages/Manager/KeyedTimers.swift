import NearbyCore

/// At most one running timer per key, each a task sleeping on a `NearbyClock`: the part of a subscription that
/// performs the trackers' "start timer / cancel timer" actions.
///
/// A value kept under the owner's lock, so that the actions of one tracker step are performed in the order they
/// were returned. When a timer's sleep ends, it calls `fire` with its key and generation; the owner then calls
/// ``finish(_:generation:)`` under its lock, which says whether that timer is still the current one (a timer
/// replaced or cancelled meanwhile is stale and must be ignored).
package struct KeyedTimers<Key: Hashable & Sendable>: Sendable {
    private var running: [Key: (generation: UInt64, task: Task<Void, Never>)] = [:]
    private var generation: UInt64 = 0

    package init() {}

    /// Starts the timer of `key` (replacing the one it has): after `delay` on `clock`, `fire(key, generation)`.
    package mutating func start(
        _ key: Key, after delay: Duration, on clock: NearbyClock,
        fire: @escaping @Sendable (_ key: Key, _ generation: UInt64) -> Void
    ) {
        generation += 1
        let current = generation
        running[key]?.task.cancel()
        running[key] = (current, Task {
            do {
                try await clock.sleep(for: delay)
            } catch {
                return
            }
            fire(key, current)
        })
    }

    /// Cancels the timer of `key`, if any.
    package mutating func cancel(_ key: Key) {
        running.removeValue(forKey: key)?.task.cancel()
    }

    /// Cancels every timer.
    package mutating func cancelAll() {
        for entry in running.values { entry.task.cancel() }
        running = [:]
    }

    /// The timer of `key` started as `generation` has fired: whether it is still current (it is then forgotten).
    package mutating func finish(_ key: Key, generation: UInt64) -> Bool {
        guard running[key]?.generation == generation else { return false }
        running[key] = nil
        return true
    }
}
