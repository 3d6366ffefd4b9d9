import Foundation
import Testing

@testable import NearbyMessages

@Suite(.timeLimit(.minutes(5))) struct FoundLostTrackerTests {
    @Test("one message from two publishers is found once and lost when the last one goes")
    func duplicates() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .zero)
        #expect(tracker.present("A", "m", now: .zero) == [.found("m")])
        #expect(tracker.present("B", "m", now: .zero).isEmpty)
        #expect(tracker.sourceGone("A", now: .zero).isEmpty)
        #expect(tracker.sourceGone("B", now: .zero) == [.lost("m")])
        #expect(tracker.foundItems.isEmpty)
    }

    @Test("a gone source starts one timer; the item is lost when it fires without a re-sighting")
    func lostAfterGrace() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .seconds(5))
        #expect(tracker.present("A", "m", now: .zero) == [.found("m")])
        #expect(tracker.sourceGone("A", now: .seconds(1)) == [.startTimer("A", after: .seconds(5))])
        #expect(tracker.sourceGone("A", now: .seconds(2)).isEmpty)  // already going: the first timer stands
        #expect(tracker.timerFired("A", now: .seconds(6)) == [.lost("m")])
        #expect(tracker.foundItems.isEmpty)
        #expect(tracker.timerFired("A", now: .seconds(7)).isEmpty)  // a stale timer does nothing
    }

    @Test("a source that returns within the grace period cancels its timer and reports nothing")
    func returnWithinGrace() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .seconds(5))
        _ = tracker.present("A", "m", now: .zero)
        #expect(tracker.sourceGone("A", now: .zero) == [.startTimer("A", after: .seconds(5))])
        #expect(tracker.present("A", "m", now: .seconds(4)) == [.cancelTimer("A")])
        #expect(tracker.timerFired("A", now: .seconds(5)).isEmpty)
        #expect(tracker.sourceGone("A", now: .seconds(60)) == [.startTimer("A", after: .seconds(5))])
        #expect(tracker.timerFired("A", now: .seconds(65)) == [.lost("m")])
    }

    @Test("refreshed sightings expire unless seen again: the timer restarts for the time left")
    func refresh() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .seconds(2))
        #expect(tracker.refresh("addr", "b", now: .zero) == [.found("b"), .startTimer("addr", after: .seconds(2))])
        #expect(tracker.refresh("addr", "b", now: .seconds(1)).isEmpty)
        #expect(tracker.timerFired("addr", now: .seconds(2)) == [.startTimer("addr", after: .seconds(1))])
        #expect(tracker.timerFired("addr", now: .seconds(3)) == [.lost("b")])
    }

    @Test("a source that changes its item loses the old one and finds the new one; removeAll cancels timers")
    func change() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .seconds(1))
        _ = tracker.present("A", "old", now: .zero)
        #expect(Set(tracker.present("A", "new", now: .zero)) == [.lost("old"), .found("new")])
        _ = tracker.sourceGone("A", now: .zero)
        #expect(tracker.removeAll() == [.cancelTimer("A"), .lost("new")])
    }
}

@Suite(.timeLimit(.minutes(5))) struct BeaconTrackerTests {
    let start = Duration.zero

    @Test("beacons are found with RSSI, refreshed silently, lost after the unseen time")
    func foundAndLost() throws {
        var tracker = BeaconTracker(strategy: BeaconStrategy(lostAfter: .seconds(3)))
        let report = AdvertisingReport(address: "11:22:33:44:55:66", rssi: -70, data: hex(BeaconVectors.iBeacon))
        let first = found(tracker.receive(report, now: start))
        #expect(first.count == 1)
        let beacon = try #require(first.first)
        #expect(beacon.rssi == -70 && beacon.address == "11:22:33:44:55:66")
        #expect(tracker.receive(report, now: start + .seconds(2)).isEmpty)
        let key = BeaconTracker.Key(address: beacon.address, message: beacon.frame.message)
        #expect(tracker.timerFired(key, now: start + .seconds(3)) == [.startTimer(key, after: .seconds(2))])
        let lost = tracker.timerFired(key, now: start + .seconds(5))
        #expect(lost == [.lost(beacon)])
    }

    /// The beacons found by `actions`.
    private func found(_ actions: [BeaconTracker.Action]) -> [Beacon] {
        actions.compactMap { action in
            if case .found(let beacon) = action { beacon } else { nil }
        }
    }

    @Test("includeIBeacons = false drops iBeacon and AltBeacon; low power then means a low duty cycle")
    func noIBeacons() {
        let strategy = BeaconStrategy(includeIBeacons: false)
        var tracker = BeaconTracker(strategy: strategy)
        #expect(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.iBeacon)), now: start).isEmpty)
        #expect(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.altBeacon)), now: start).isEmpty)
        #expect(found(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.uidFull)), now: start)).count == 1)
        #expect(strategy.scanSettings.lowDutyCycle)
        #expect(!BeaconStrategy().scanSettings.lowDutyCycle)
        #expect(!BeaconStrategy(includeIBeacons: false, lowPowerPreferred: false).scanSettings.lowDutyCycle)
    }

    @Test("UID and TLM from one address are two beacons")
    func twoFrames() {
        var tracker = BeaconTracker(strategy: BeaconStrategy())
        #expect(found(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.uidFull)), now: start)).count == 1)
        #expect(found(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.tlmPlain)), now: start)).count == 1)
        #expect(found(tracker.receive(AdvertisingReport(address: "B", rssi: -50, data: hex(BeaconVectors.uidFull)), now: start)).count == 1)
    }
}
