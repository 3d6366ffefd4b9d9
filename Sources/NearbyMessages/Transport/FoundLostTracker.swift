import NearbyCore

/// The found/lost bookkeeping of a subscription, as a value: feed it sightings and timer expiries (with readings of
/// a `NearbyClock`), perform the actions it returns. It owns no clock and no tasks.
///
/// An item (a message, a beacon) is *found* the first time any source (a publisher's endpoint, a beacon's address)
/// shows it, and *lost* when no source has shown it for the grace period: duplicates from several sources are
/// reported once. Each source whose grace period runs has one timer (a `LostEndpointTracker` decides when it is
/// lost); a source that shows itself again cancels it.
package struct FoundLostTracker<Source: Hashable & Sendable, Item: Hashable & Sendable>: Sendable {
    /// What the caller must do.
    package enum Action: Sendable, Hashable {
        /// Report the item as found.
        case found(Item)
        /// Report the item as lost.
        case lost(Item)
        /// Call ``timerFired(_:now:)`` for the source after the duration (replacing any timer it has).
        case startTimer(Source, after: Duration)
        /// The source's timer is no longer needed.
        case cancelTimer(Source)
    }

    /// How long an item stays found after its last source went away (or, with ``refresh(_:_:now:)``, after it was
    /// last seen).
    package var lostAfter: Duration { expiring.timeout }

    /// The item each source shows.
    private var sightings: [Source: Item] = [:]
    /// The sources whose grace period runs.
    private var expiring: LostEndpointTracker<Source>
    private var found: Set<Item> = []

    /// Creates a tracker.
    package init(lostAfter: Duration) {
        expiring = LostEndpointTracker(timeout: lostAfter)
    }

    /// The items currently found.
    package var foundItems: Set<Item> { found }

    /// `source` shows `item` and stays until ``sourceGone(_:now:)`` (an advertising endpoint).
    package mutating func present(_ source: Source, _ item: Item, now: Duration) -> [Action] {
        let cancel: [Action] = expiring.forget(source) ? [.cancelTimer(source)] : []
        return cancel + record(source, item)
    }

    /// `source` showed `item` at `now` and expires unless seen again within ``lostAfter`` (a beacon).
    package mutating func refresh(_ source: Source, _ item: Item, now: Duration) -> [Action] {
        let actions = record(source, item)
        return actions + perform(expiring.seen(source, now: now), now: now)
    }

    /// `source` went away: its item is lost after ``lostAfter`` unless another source shows it.
    package mutating func sourceGone(_ source: Source, now: Duration) -> [Action] {
        guard sightings[source] != nil, !expiring.isTracking(source) else { return [] }
        return perform(expiring.seen(source, now: now), now: now)
    }

    /// The timer of `source` fired at `now`: its item is lost if the source stayed silent for ``lostAfter`` (and no
    /// other source shows it); otherwise the timer starts again for the time left.
    package mutating func timerFired(_ source: Source, now: Duration) -> [Action] {
        perform(expiring.timerFired(source, now: now), now: now)
    }

    /// Drops everything, reporting every found item as lost and cancelling every timer.
    package mutating func removeAll() -> [Action] {
        let timers = sightings.keys.filter { expiring.isTracking($0) }.map(Action.cancelTimer)
        let items = found
        sightings = [:]
        expiring = LostEndpointTracker(timeout: expiring.timeout)
        found = []
        return timers + items.map(Action.lost)
    }

    private mutating func perform(_ action: LostEndpointTracker<Source>.Action?, now: Duration) -> [Action] {
        switch action {
        case nil:
            return []
        case .startTimer(let source, let delay) where delay <= .zero:
            // No grace period: the source is lost at once.
            return perform(expiring.timerFired(source, now: now), now: now)
        case .startTimer(let source, let delay):
            return [.startTimer(source, after: delay)]
        case .lost(let source):
            guard let item = sightings.removeValue(forKey: source) else { return [] }
            return settle([item])
        }
    }

    private mutating func record(_ source: Source, _ item: Item) -> [Action] {
        let previous = sightings.updateValue(item, forKey: source)
        var changed: Set<Item> = [item]
        if let previous, previous != item { changed.insert(previous) }
        return settle(changed)
    }

    private mutating func settle(_ items: Set<Item>) -> [Action] {
        var actions: [Action] = []
        let shown = Set(sightings.values)
        for item in items {
            if shown.contains(item), !found.contains(item) {
                found.insert(item)
                actions.append(.found(item))
            } else if !shown.contains(item), found.contains(item) {
                found.remove(item)
                actions.append(.lost(item))
            }
        }
        return actions
    }
}
