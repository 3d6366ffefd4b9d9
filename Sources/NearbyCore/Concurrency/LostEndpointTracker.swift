/// Decides when a discovered endpoint (a BLE address, a gone publisher, a beacon) is lost: when it has not been
/// seen for ``timeout``. A value-type state machine that owns no clock and no tasks; the caller performs its actions.
///
/// Each tracked key has exactly one timer. A sighting of a new key starts it (``Action/startTimer(_:after:)``);
/// later sightings only note the time, so a busy advertiser costs one timer per ``timeout``, not one per report.
/// When the timer fires, the key is lost if it has been silent for the whole timeout; otherwise the timer is
/// started again for the time that remains.
package struct LostEndpointTracker<Key: Hashable & Sendable>: Sendable {
    /// What the caller must do.
    package enum Action: Sendable, Hashable {
        /// Call ``timerFired(_:now:)`` for the key after the duration.
        case startTimer(Key, after: Duration)
        /// The key was silent for the timeout and is no longer tracked; its timer has finished.
        case lost(Key)
    }

    /// How long a key may go unseen before it is lost.
    package let timeout: Duration
    private var lastSeen: [Key: Duration] = [:]

    /// Creates a tracker that loses keys unseen for `timeout`.
    package init(timeout: Duration) {
        self.timeout = timeout
    }

    /// The keys being tracked (each with one timer running).
    package var trackedKeys: Set<Key> { Set(lastSeen.keys) }

    /// `key` was seen at `now` (a clock reading, see `NearbyClock.now`).
    package mutating func seen(_ key: Key, now: Duration) -> Action? {
        let isNew = lastSeen.updateValue(now, forKey: key) == nil
        return isNew ? .startTimer(key, after: timeout) : nil
    }

    /// Whether `key` is tracked (its timer running).
    package func isTracking(_ key: Key) -> Bool { lastSeen[key] != nil }

    /// Stops tracking `key` without losing it; returns whether it was tracked (the caller then cancels its timer).
    package mutating func forget(_ key: Key) -> Bool {
        lastSeen.removeValue(forKey: key) != nil
    }

    /// The timer of `key` fired at `now`.
    package mutating func timerFired(_ key: Key, now: Duration) -> Action? {
        guard let seen = lastSeen[key] else { return nil }
        let silence = now - seen
        if silence >= timeout {
            lastSeen[key] = nil
            return .lost(key)
        }
        return .startTimer(key, after: timeout - silence)
    }
}
