/// Turns advertising reports into beacon found/lost actions: decodes, drops what the strategy excludes, and keeps
/// each beacon found until it has not been seen for ``BeaconStrategy/lostAfter``. A value; the caller supplies time.
package struct BeaconTracker: Sendable {
    /// What the caller must report.
    package enum Action: Sendable, Hashable {
        /// A beacon was seen for the first time (or again after it was lost).
        case found(Beacon)
        /// A beacon has not been seen for the unseen timeout; the value is its last sighting.
        case lost(Beacon)
    }

    struct Key: Hashable, Sendable {
        var address: String
        var message: Message
    }

    /// The strategy.
    package let strategy: BeaconStrategy
    private var tracker: FoundLostTracker<Key, Key>
    private var latest: [Key: Beacon] = [:]

    /// Creates a tracker.
    package init(strategy: BeaconStrategy) {
        self.strategy = strategy
        tracker = FoundLostTracker(lostAfter: strategy.lostAfter)
    }

    /// A report arrived at `now`.
    package mutating func receive(_ report: AdvertisingReport, at now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        for frame in BeaconDecoder.decode(report.data) where strategy.includes(frame) {
            let beacon = Beacon(frame: frame, address: report.address, rssi: report.rssi)
            let key = Key(address: report.address, message: frame.message)
            latest[key] = beacon
            actions += map(tracker.refresh(key, key, at: now))
        }
        return actions
    }

    /// Time passed: reports beacons unseen for too long.
    package mutating func tick(at now: ContinuousClock.Instant) -> [Action] {
        map(tracker.tick(at: now))
    }

    /// The next moment ``tick(at:)`` could report something.
    package var nextExpiry: ContinuousClock.Instant? { tracker.nextExpiry }

    private mutating func map(_ actions: [FoundLostTracker<Key, Key>.Action]) -> [Action] {
        actions.compactMap { action in
            switch action {
            case .found(let key): return latest[key].map(Action.found)
            case .lost(let key):
                defer { latest[key] = nil }
                return latest[key].map(Action.lost)
            }
        }
    }
}
