/// The found/lost bookkeeping of a subscription, as a value: feed it sightings and the passing of time, perform the
/// actions it returns. It owns no clock and no tasks.
///
/// An item (a message, a beacon) is *found* the first time any source (a publisher's endpoint, a beacon's address)
/// shows it, and *lost* when no source has shown it for the grace period: duplicates from several sources are
/// reported once.
package struct FoundLostTracker<Source: Hashable & Sendable, Item: Hashable & Sendable>: Sendable {
    /// What the caller must do.
    package enum Action: Sendable, Hashable {
        /// Report the item as found.
        case found(Item)
        /// Report the item as lost.
        case lost(Item)
    }

    /// How long an item stays found after its last source went away (or, with ``refresh(_:_:at:)``, after it was
    /// last seen).
    package var lostAfter: Duration

    private struct Sighting: Sendable {
        var item: Item
        /// `nil` while the source is present; the moment it expires otherwise.
        var expiry: ContinuousClock.Instant?
    }

    private var sightings: [Source: Sighting] = [:]
    private var found: Set<Item> = []

    /// Creates a tracker.
    package init(lostAfter: Duration) {
        self.lostAfter = lostAfter
    }

    /// The items currently found.
    package var foundItems: Set<Item> { found }

    /// `source` shows `item` and stays until ``sourceGone(_:at:)`` (an advertising endpoint).
    package mutating func present(_ source: Source, _ item: Item, at now: ContinuousClock.Instant) -> [Action] {
        record(source, Sighting(item: item, expiry: nil), now)
    }

    /// `source` showed `item` just now and expires unless seen again within ``lostAfter`` (a beacon).
    package mutating func refresh(_ source: Source, _ item: Item, at now: ContinuousClock.Instant) -> [Action] {
        record(source, Sighting(item: item, expiry: now + lostAfter), now)
    }

    /// `source` went away: its item is lost after ``lostAfter`` unless another source shows it.
    package mutating func sourceGone(_ source: Source, at now: ContinuousClock.Instant) -> [Action] {
        guard var sighting = sightings[source] else { return [] }
        if sighting.expiry == nil { sighting.expiry = now + lostAfter }
        sightings[source] = sighting
        return tick(at: now)
    }

    /// Time passed: reports the items whose every source has expired.
    package mutating func tick(at now: ContinuousClock.Instant) -> [Action] {
        var changed: Set<Item> = []
        for (source, sighting) in sightings {
            if let expiry = sighting.expiry, expiry <= now {
                sightings[source] = nil
                changed.insert(sighting.item)
            }
        }
        return settle(changed)
    }

    /// Drops everything, reporting every found item as lost.
    package mutating func removeAll() -> [Action] {
        let items = found
        sightings = [:]
        found = []
        return items.map(Action.lost)
    }

    /// The next moment ``tick(at:)`` could report something, if any.
    package var nextExpiry: ContinuousClock.Instant? {
        sightings.values.compactMap(\.expiry).min()
    }

    private mutating func record(_ source: Source, _ sighting: Sighting, _ now: ContinuousClock.Instant) -> [Action] {
        let previous = sightings.updateValue(sighting, forKey: source)
        var changed: Set<Item> = [sighting.item]
        if let previous, previous.item != sighting.item { changed.insert(previous.item) }
        return tick(at: now) + settle(changed)
    }

    private mutating func settle(_ items: Set<Item>) -> [Action] {
        var actions: [Action] = []
        let shown = Set(sightings.values.map(\.item))
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
