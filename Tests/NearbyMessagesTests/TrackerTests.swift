import Foundation
import Testing

@testable import NearbyMessages

@Suite struct FoundLostTrackerTests {
    let start = ContinuousClock.now

    @Test("one message from two publishers is found once and lost when the last one goes")
    func duplicates() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .zero)
        #expect(tracker.present("A", "m", at: start) == [.found("m")])
        #expect(tracker.present("B", "m", at: start).isEmpty)
        #expect(tracker.sourceGone("A", at: start).isEmpty)
        #expect(tracker.sourceGone("B", at: start) == [.lost("m")])
        #expect(tracker.foundItems.isEmpty)
    }

    @Test("a grace period keeps a message found until it passes, and a return within it reports nothing")
    func grace() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .seconds(5))
        _ = tracker.present("A", "m", at: start)
        #expect(tracker.sourceGone("A", at: start).isEmpty)
        #expect(tracker.tick(at: start + .seconds(4)).isEmpty)
        #expect(tracker.present("A", "m", at: start + .seconds(4)).isEmpty)
        #expect(tracker.tick(at: start + .seconds(60)).isEmpty)
        _ = tracker.sourceGone("A", at: start + .seconds(60))
        #expect(tracker.nextExpiry == start + .seconds(65))
        #expect(tracker.tick(at: start + .seconds(65)) == [.lost("m")])
    }

    @Test("refreshed sightings expire unless seen again")
    func refresh() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .seconds(2))
        #expect(tracker.refresh("addr", "b", at: start) == [.found("b")])
        #expect(tracker.refresh("addr", "b", at: start + .seconds(1)).isEmpty)
        #expect(tracker.tick(at: start + .milliseconds(2500)).isEmpty)
        #expect(tracker.tick(at: start + .seconds(3)) == [.lost("b")])
    }

    @Test("a source that changes its item loses the old one and finds the new one")
    func change() {
        var tracker = FoundLostTracker<String, String>(lostAfter: .zero)
        _ = tracker.present("A", "old", at: start)
        #expect(Set(tracker.present("A", "new", at: start)) == [.lost("old"), .found("new")])
        #expect(tracker.removeAll() == [.lost("new")])
    }
}

@Suite struct BeaconTrackerTests {
    let start = ContinuousClock.now

    @Test("beacons are found with RSSI, refreshed silently, lost after the unseen time")
    func foundAndLost() throws {
        var tracker = BeaconTracker(strategy: BeaconStrategy(lostAfter: .seconds(3)))
        let report = AdvertisingReport(address: "11:22:33:44:55:66", rssi: -70, data: hex(BeaconVectors.iBeacon))
        let first = tracker.receive(report, at: start)
        guard case .found(let beacon)? = first.first, first.count == 1 else {
            Issue.record("\(first)")
            return
        }
        #expect(beacon.rssi == -70 && beacon.address == "11:22:33:44:55:66")
        #expect(tracker.receive(report, at: start + .seconds(2)).isEmpty)
        #expect(tracker.tick(at: start + .seconds(4)).isEmpty)
        let lost = tracker.tick(at: start + .seconds(5))
        #expect(lost.count == 1)
        if case .lost(let gone)? = lost.first { #expect(gone.frame == beacon.frame) } else { Issue.record("\(lost)") }
    }

    @Test("includeIBeacons = false drops iBeacon and AltBeacon; low power then means a low duty cycle")
    func noIBeacons() {
        let strategy = BeaconStrategy(includeIBeacons: false)
        var tracker = BeaconTracker(strategy: strategy)
        #expect(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.iBeacon)), at: start).isEmpty)
        #expect(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.altBeacon)), at: start).isEmpty)
        #expect(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.uidFull)), at: start).count == 1)
        #expect(strategy.scanSettings.lowDutyCycle)
        #expect(!BeaconStrategy().scanSettings.lowDutyCycle)
        #expect(!BeaconStrategy(includeIBeacons: false, lowPowerPreferred: false).scanSettings.lowDutyCycle)
    }

    @Test("UID and TLM from one address are two beacons")
    func twoFrames() {
        var tracker = BeaconTracker(strategy: BeaconStrategy())
        #expect(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.uidFull)), at: start).count == 1)
        #expect(tracker.receive(AdvertisingReport(address: "A", rssi: -50, data: hex(BeaconVectors.tlmPlain)), at: start).count == 1)
        #expect(tracker.receive(AdvertisingReport(address: "B", rssi: -50, data: hex(BeaconVectors.uidFull)), at: start).count == 1)
    }
}
