import Foundation
import NearbyCore
import NearbyWire
import Testing

@testable import NearbyMessages

/// An item that counts how often it is hashed: a flood of sightings must cost O(1) hashing per sighting.
private struct CountedItem: Hashable, Sendable {
    static let hashes = LockedValue(0)
    let value: Int
    func hash(into hasher: inout Hasher) {
        Self.hashes.withLock { $0 += 1 }
        hasher.combine(value)
    }
}

/// Found/lost tracking under floods of spoofed sightings: bounded CPU (defect 6 of issue 22) and bounded memory.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct FloodTrackerTests {
    @Test("4,000 distinct sources cost O(N) hashing, not O(N²): each sighting no longer rebuilds a set of all items")
    func sightingsCostConstantWork() {
        var tracker = FoundLostTracker<Int, CountedItem>(lostAfter: .seconds(10))
        CountedItem.hashes.withLock { $0 = 0 }
        let count = 4_000
        for source in 0..<count { _ = tracker.present(source, CountedItem(value: source), now: .zero) }
        for source in 0..<count { _ = tracker.sourceGone(source, now: .zero) }
        for source in 0..<count { _ = tracker.timerFired(source, now: .seconds(11)) }
        let hashes = CountedItem.hashes.withLock { $0 }
        // Before: every sighting hashed every item shown (Set(sightings.values)), about N²/2 = 8 million.
        #expect(hashes < 20 * count, "\(hashes) hashes for \(count) sources")
        #expect(tracker.foundCount == 0 && tracker.sourceCount == 0)
    }

    @Test("at most maxItems items are found and maxSources sources held; the rest is ignored until a loss makes room")
    func limits() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .zero, maxSources: 3, maxItems: 2)
        #expect(tracker.present("A", "a", now: .zero) == [.found("a")])
        #expect(tracker.present("B", "b", now: .zero) == [.found("b")])
        #expect(tracker.present("C", "c", now: .zero).isEmpty)  // a third item: ignored
        #expect(tracker.ignoredSightings == 1 && !tracker.hasRoom(for: "C"))
        #expect(tracker.present("C", "a", now: .zero).isEmpty)  // a known item from a new source: held, no event
        #expect(tracker.sourceCount == 3)
        #expect(tracker.present("D", "a", now: .zero).isEmpty)  // a fourth source: ignored
        #expect(tracker.ignoredSightings == 2)
        // A source that changes to a new item frees the place of its old one when it was the only one showing it.
        #expect(Set(tracker.present("B", "e", now: .zero)) == [.lost("b"), .found("e")])
        #expect(tracker.sourceGone("B", now: .zero) == [.lost("e")])
        #expect(tracker.present("D", "d", now: .zero) == [.found("d")])
        #expect(tracker.foundItems == ["a", "d"])
    }

    @Test("a beacon flood from 5,000 random addresses holds at most maxTrackedBeacons beacons and timers' keys")
    func beaconFlood() throws {
        var tracker = BeaconTracker(strategy: BeaconStrategy(), maxBeacons: 64)
        let frame = hex(BeaconVectors.uidFull)
        var found = 0
        var timers = Set<BeaconTracker.Key>()
        for index in 0..<5_000 {
            let address = String(format: "C0:00:00:00:%02X:%02X", index >> 8, index & 0xFF)
            let report = AdvertisingReport(address: address, rssi: -50, data: frame)
            for action in tracker.receive(report, now: .milliseconds(index)) {
                switch action {
                case .found: found += 1
                case .startTimer(let key, _): timers.insert(key)
                default: break
                }
            }
        }
        #expect(found == 64 && timers.count == 64 && tracker.trackedCount == 64)
        #expect(tracker.ignoredReports == 5_000 - 64)
    }

    @Test("the fetched-message cache keeps the most recently used, at most its capacity")
    func fetchedCache() {
        var cache = FetchedMessageCache(capacity: 2)
        func message(_ index: Int) -> (MessageDescriptor, Message) {
            let message = Message(content: Data(repeating: UInt8(index), count: 200))
            return (MessageDescriptor(message), message)
        }
        let (d1, m1) = message(1), (d2, m2) = message(2), (d3, m3) = message(3)
        cache.store(m1, for: d1)
        cache.store(m2, for: d2)
        #expect(cache.message(for: d1) == m1)  // 1 is now the most recently used
        cache.store(m3, for: d3)
        #expect(cache.count == 2)
        #expect(cache.message(for: d2) == nil && cache.message(for: d1) == m1 && cache.message(for: d3) == m3)
        var none = FetchedMessageCache(capacity: 0)
        none.store(m1, for: d1)
        #expect(none.count == 0)
    }
}
