import Logging
import NearbyCore
import NearbyTesting
import NearbyWire
import Testing

@testable import NearbyBLE

/// The lost-endpoint timers: the pure machine, and a discovery run driving it on a manual clock (no polling, no
/// fake tick reports; each test runs in milliseconds).
@Suite("Lost-endpoint tracking", .timeLimit(.minutes(5)))
struct LostEndpointTrackerTests {
    @Test func aNewKeyStartsOneTimerAndLaterSightingsStartNone() {
        var tracker = LostEndpointTracker<String>(timeout: .seconds(12))
        #expect(tracker.seen("a", now: .zero) == .startTimer("a", after: .seconds(12)))
        #expect(tracker.seen("a", now: .seconds(3)) == nil)
        #expect(tracker.seen("b", now: .seconds(4)) == .startTimer("b", after: .seconds(12)))
        #expect(tracker.trackedKeys == ["a", "b"])
    }

    @Test func aTimerFiringAfterASightingRestartsForTheRemainder() {
        var tracker = LostEndpointTracker<String>(timeout: .seconds(12))
        _ = tracker.seen("a", now: .zero)
        _ = tracker.seen("a", now: .seconds(5))
        #expect(tracker.timerFired("a", now: .seconds(12)) == .startTimer("a", after: .seconds(5)))
        #expect(tracker.timerFired("a", now: .seconds(17)) == .lost("a"))
        #expect(tracker.trackedKeys.isEmpty)
    }

    @Test func aLostKeyIsForgottenAndStartsAFreshTimerWhenSeenAgain() {
        var tracker = LostEndpointTracker<String>(timeout: .seconds(2))
        _ = tracker.seen("a", now: .zero)
        #expect(tracker.timerFired("a", now: .seconds(2)) == .lost("a"))
        #expect(tracker.timerFired("a", now: .seconds(3)) == nil)  // a stale timer does nothing
        #expect(tracker.seen("a", now: .seconds(4)) == .startTimer("a", after: .seconds(2)))
    }

    @Test(.timeLimit(.minutes(1)))
    func aDiscoveryRunLosesAnEndpointTwelveSecondsAfterItsLastReport() async throws {
        let clock = ManualClock()
        let (events, continuation) = AsyncThrowingStream.makeStream(of: DiscoveryEvent.self, throwing: (any Error).self)
        let address = BLEAddress(string: "C0:00:00:00:00:01")!
        let run = BLEDiscoveryRun(
            tracker: BLEDiscoveryTracker(serviceID: "com.example.ble", pcp: .p2pPointToPoint, lostTimeout: .seconds(12)),
            clock: NearbyClock(clock), events: continuation, logger: Logger(label: "test"))
        var iterator = events.makeAsyncIterator()

        run.receive(try fastReport(from: address, endpointID: "ABCD"))
        #expect(try await iterator.next() == .found(Self.endpoint("ABCD", at: address)))
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(6))
        run.receive(try fastReport(from: address, endpointID: "ABCD"))  // seen again at 6 s
        clock.advance(by: .seconds(6))  // the timer fires at 12 s and restarts for the 6 s left
        await clock.waitForSleepers(atLeast: 1)
        continuation.yield(.lost(endpointID: "marker", medium: .ble))
        clock.advance(by: .seconds(6))
        #expect(try await iterator.next() == .lost(endpointID: "marker", medium: .ble))
        #expect(try await iterator.next() == .lost(endpointID: "ABCD", medium: .ble))
        #expect(clock.now.offset == .seconds(18))
        run.stop()
    }

    @Test(.timeLimit(.minutes(1)))
    func stoppingARunCancelsItsTimers() async throws {
        let clock = ManualClock()
        let (_, continuation) = AsyncThrowingStream.makeStream(of: DiscoveryEvent.self, throwing: (any Error).self)
        let run = BLEDiscoveryRun(
            tracker: BLEDiscoveryTracker(serviceID: "com.example.ble", pcp: .p2pPointToPoint, lostTimeout: .seconds(12)),
            clock: NearbyClock(clock), events: continuation, logger: Logger(label: "test"))
        run.receive(try fastReport(from: BLEAddress(string: "C0:00:00:00:00:01")!, endpointID: "ABCD"))
        run.receive(try fastReport(from: BLEAddress(string: "C0:00:00:00:00:02")!, endpointID: "EFGH"))
        await clock.waitForSleepers(atLeast: 2)
        run.stop()
        #expect(clock.sleeperCount == 0)
    }

    private func fastReport(from address: BLEAddress, endpointID: String) throws -> AdvertisingReport {
        let connections = try BleConnectionsAdvertisement.fast(
            pcp: .p2pPointToPoint, endpointID: EndpointID(endpointID), endpointInfo: Array("hi".utf8))
        let medium = try BleMediumAdvertisement.fast(data: connections.encodedBytes, deviceToken: [1, 2])
        return AdvertisingReport(
            eventType: 0, isExtended: false, address: address,
            data: AdvertisingData.build(serviceUUID: 0xFEF3, serviceData: medium.encodedBytes), rssi: -40)
    }

    private static func endpoint(_ id: String, at address: BLEAddress) -> DiscoveredEndpoint {
        DiscoveredEndpoint(
            endpointID: id, endpointInfo: Array("hi".utf8), medium: .ble, route: .ble(address: address.description, psm: nil))
    }
}
