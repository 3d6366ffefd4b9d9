/// Turns advertising reports into beacon found/lost actions: decodes, drops what the strategy excludes, and keeps
/// each beacon found until it has not been seen for ``BeaconStrategy/lostAfter``. A value; the caller supplies time
/// (readings of a `NearbyClock`) and runs the timers it asks for, one per beacon.
package struct BeaconTracker: Sendable {
    /// What the caller must report.
    package enum Action: Sendable, Hashable {
        /// A beacon was seen for the first time (or again after it was lost).
        case found(Beacon)
        /// A beacon has not been seen for the unseen timeout; the value is its last sighting.
        case lost(Beacon)
        /// Call ``timerFired(_:now:)`` for the beacon after the duration (replacing any timer it has).
        case startTimer(Key, after: Duration)
        /// The beacon's timer is no longer needed.
        case cancelTimer(Key)
    }

    /// One beacon: a message from an address.
    package struct Key: Hashable, Sendable {
        var address: String
        var message: Message
    }

    /// The strategy.
    package let strategy: BeaconStrategy
    private var tracker: FoundLostTracker<Key, Key>
    private var latest: [Key: Beacon] = [:]

    /// Creates a tracker holding at most `maxBeacons` beacons: reports of further beacons are ignored (counted in
    /// ``ignoredReports``) until one is lost, so a flood of spoofed addresses costs bounded memory and timers.
    package init(strategy: BeaconStrategy, maxBeacons: Int = SubscriptionLimits().maxTrackedBeacons) {
        self.strategy = strategy
        tracker = FoundLostTracker(lostAfter: strategy.lostAfter, maxSources: maxBeacons, maxItems: maxBeacons)
    }

    /// How many beacons are tracked.
    package var trackedCount: Int { tracker.sourceCount }
    /// Beacon sightings ignored because the tracker was full.
    package var ignoredReports: Int { tracker.ignoredSightings }

    /// A report arrived at `now`.
    package mutating func receive(_ report: AdvertisingReport, now: Duration) -> [Action] {
        var actions: [Action] = []
        for frame in BeaconDecoder.decode(report.data) where strategy.includes(frame) {
            let beacon = Beacon(frame: frame, address: report.address, rssi: report.rssi)
            let key = Key(address: report.address, message: frame.message)
            guard tracker.hasRoom(for: key) else {
                _ = tracker.refresh(key, key, now: now)  // counted as ignored
                continue
            }
            latest[key] = beacon
            actions += map(tracker.refresh(key, key, now: now))
        }
        return actions
    }

    /// The timer of beacon `key` fired at `now`: reports it lost if it was unseen for too long.
    package mutating func timerFired(_ key: Key, now: Duration) -> [Action] {
        map(tracker.timerFired(key, now: now))
    }

    private mutating func map(_ actions: [FoundLostTracker<Key, Key>.Action]) -> [Action] {
        actions.compactMap { action in
            switch action {
            case .found(let key): return latest[key].map(Action.found)
            case .lost(let key):
                defer { latest[key] = nil }
                return latest[key].map(Action.lost)
            case .startTimer(let key, let delay): return .startTimer(key, after: delay)
            case .cancelTimer(let key): return .cancelTimer(key)
            }
        }
    }
}
