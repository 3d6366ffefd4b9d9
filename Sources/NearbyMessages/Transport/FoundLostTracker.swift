import NearbyCore

/// The found/lost bookkeeping of a subscription, as a value: feed it sightings and timer expiries (with readings of
/// a `NearbyClock`), perform the actions it returns. It owns no clock and no tasks.
///
/// An item (a message, a beacon) is *found* the first time any source (a publisher's endpoint, a beacon's address)
/// shows it, and *lost* when no source has shown it for the grace period: duplicates from several sources are
/// reported once. Each source whose grace period runs has one timer (a `LostEndpointTracker` decides when it is
/// lost); a source that shows itself again cancels it.
///
/// Every step costs O(1) (amortised) whatever the number of sources: each item keeps a count of the sources
/// showing it. Memory is bounded: at most ``maxSources`` sources and ``maxItems`` distinct found items are held; a
/// sighting beyond either is ignored (counted in ``ignoredSightings``) until room is made by a loss, so a flood of
/// spoofed sightings costs bounded memory and CPU and cannot push out what is already found.
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
    /// The most sources held at once.
    package let maxSources: Int
    /// The most distinct items found at once.
    package let maxItems: Int
    /// Sightings ignored because ``maxSources`` or ``maxItems`` was reached.
    package private(set) var ignoredSightings = 0

    /// The item each source shows.
    private var sightings: [Source: Item] = [:]
    /// How many sources show each found item (never 0: an item shown by none is not found).
    private var showing: [Item: Int] = [:]
    /// The sources whose grace period runs.
    private var expiring: LostEndpointTracker<Source>

    /// Creates a tracker holding at most `maxSources` sources and `maxItems` found items.
    package init(lostAfter: Duration, maxSources: Int = .max, maxItems: Int = .max) {
        expiring = LostEndpointTracker(timeout: lostAfter)
        self.maxSources = max(1, maxSources)
        self.maxItems = max(1, maxItems)
    }

    /// The items currently found.
    package var foundItems: Set<Item> { Set(showing.keys) }
    /// How many items are found.
    package var foundCount: Int { showing.count }
    /// How many sources are held (showing an item, or going).
    package var sourceCount: Int { sightings.count }

    /// Whether `item` is found.
    package func isFound(_ item: Item) -> Bool { showing[item] != nil }

    /// Whether a sighting from `source` of an item not yet found would be taken (the caller may skip fetching a
    /// large message that would be ignored).
    package func hasRoom(for source: Source) -> Bool {
        sightings[source] != nil || (sightings.count < maxSources && showing.count < maxItems)
    }

    /// `source` shows `item` and stays until ``sourceGone(_:now:)`` (an advertising endpoint).
    package mutating func present(_ source: Source, _ item: Item, now: Duration) -> [Action] {
        guard admits(source, item) else { return [] }
        let cancel: [Action] = expiring.forget(source) ? [.cancelTimer(source)] : []
        return cancel + record(source, item)
    }

    /// `source` showed `item` at `now` and expires unless seen again within ``lostAfter`` (a beacon).
    package mutating func refresh(_ source: Source, _ item: Item, now: Duration) -> [Action] {
        guard admits(source, item) else { return [] }
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
        let items = showing.keys
        sightings = [:]
        showing = [:]
        expiring = LostEndpointTracker(timeout: expiring.timeout)
        return timers + items.map(Action.lost)
    }

    /// Whether a sighting of `item` from `source` fits in the limits; counts it when it does not.
    private mutating func admits(_ source: Source, _ item: Item) -> Bool {
        let previous = sightings[source]
        if previous == nil, sightings.count >= maxSources {
            ignoredSightings += 1
            return false
        }
        if showing[item] == nil, previous != item {
            // Replacing the only sighting of another item frees that item's place.
            let freed = previous.map { showing[$0] == 1 } ?? false
            if showing.count - (freed ? 1 : 0) >= maxItems {
                ignoredSightings += 1
                return false
            }
        }
        return true
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
            return release(item)
        }
    }

    private mutating func record(_ source: Source, _ item: Item) -> [Action] {
        let previous = sightings.updateValue(item, forKey: source)
        guard previous != item else { return [] }
        var actions: [Action] = []
        showing[item, default: 0] += 1
        if showing[item] == 1 { actions.append(.found(item)) }
        if let previous { actions += release(previous) }
        return actions
    }

    /// One source fewer shows `item`: lost when it was the last.
    private mutating func release(_ item: Item) -> [Action] {
        guard let count = showing[item] else { return [] }
        if count > 1 {
            showing[item] = count - 1
            return []
        }
        showing[item] = nil
        return [.lost(item)]
    }
}
