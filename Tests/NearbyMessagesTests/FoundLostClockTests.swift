import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import Testing

@testable import NearbyMessages

/// Found/lost and TTL timing of subscriptions and publications on a manual clock: each timer is one sleeper armed
/// at its deadline (no ticker), so these tests advance the clock instead of waiting and run in milliseconds.
@Suite("Found/lost timers on a manual clock", .timeLimit(.minutes(5)))
struct FoundLostClockTests {
    static let message = Message(content: Data("hello".utf8), namespace: "ns", type: "timing")

    /// Publications of `air`'s in-memory medium, found by subscriptions on the same air.
    static func inMemory(_ air: InMemoryMedium.Air) -> MediumProvider {
        { kind, _ in
            guard kind == .wifiLAN else { throw NearbyError(.bluetoothUnavailable, "no BLE in this test") }
            return InMemoryMedium(air: air)
        }
    }

    /// A subscription on `clock` to the in-memory air, without TTL, losing messages `lostAfter` after they go.
    static func subscribe(
        _ air: InMemoryMedium.Air, clock: ManualClock, lostAfter: Duration
    ) async throws -> Subscription {
        let manager = try testManager("timing", mediums: inMemory(air), clock: NearbyClock(clock))
        return try await manager.subscribe(
            options: SubscribeOptions(strategy: MessageStrategy(mediums: .wifiLAN), ttl: nil, lostAfter: lostAfter))
    }

    /// A publisher of ``message`` on `air` that can stop and start advertising under one endpoint ID.
    static func advertiser(_ air: InMemoryMedium.Air) throws -> (ConnectionManager, Advertiser) {
        let options = ConnectionOptions(
            drivers: [InMemoryMedium(air: air)], receiveDirectory: try temporaryDirectory("timing"),
            logger: Logger(label: "test"))
        let manager = ConnectionManager(serviceID: "timing", strategy: .pointToPoint, options: options)
        return (manager, Advertiser(connectionManager: manager))
    }

    static var advertisement: Data { Data(MessageEnvelope.advertisement(for: message).bytes) }

    @Test(.timeLimit(.minutes(1)))
    func aMessageIsLostTheGracePeriodAfterItsPublisherStops() async throws {
        let clock = ManualClock()
        let air = InMemoryMedium.Air()
        let subscription = try await Self.subscribe(air, clock: clock, lostAfter: .seconds(10))
        var events = subscription.events.makeAsyncIterator()
        let publisher = try testManager("timing", mediums: Self.inMemory(air))
        let publication = try await publisher.publish(
            Self.message, options: PublishOptions(strategy: MessageStrategy(mediums: .wifiLAN), ttl: nil))
        #expect(await events.next() == MessageEvent(kind: .found, message: Self.message))

        await publication.cancel()
        await clock.waitForSleepers(atLeast: 1)  // the grace timer of the gone publisher, and nothing else
        clock.advance(by: .seconds(9))
        #expect(clock.sleeperCount == 1)
        #expect(subscription.foundMessages == [Self.message])
        clock.advance(by: .seconds(1))
        #expect(await events.next() == MessageEvent(kind: .lost, message: Self.message))
        #expect(subscription.foundMessages.isEmpty)
        await subscription.cancel()
    }

    @Test(.timeLimit(.minutes(1)))
    func aPublisherSeenAgainWithinTheGracePeriodIsNotLost() async throws {
        let clock = ManualClock()
        let air = InMemoryMedium.Air()
        let subscription = try await Self.subscribe(air, clock: clock, lostAfter: .seconds(10))
        var events = subscription.events.makeAsyncIterator()
        let (publisher, advertiser) = try Self.advertiser(air)
        _ = try await advertiser.startAdvertising(using: Self.advertisement)
        #expect(await events.next() == MessageEvent(kind: .found, message: Self.message))

        advertiser.stopAdvertising()
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(5))
        _ = try await advertiser.startAdvertising(using: Self.advertisement)  // back: the timer is cancelled
        #expect(await eventually { clock.sleeperCount == 0 })
        clock.advance(by: .seconds(60))
        #expect(subscription.foundMessages == [Self.message])

        advertiser.stopAdvertising()  // gone again at 65 s: lost at 75 s
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(10))
        #expect(await events.next() == MessageEvent(kind: .lost, message: Self.message))
        #expect(clock.now.offset == .seconds(75))
        await subscription.cancel()
        await publisher.shutdown()
    }

    @Test(.timeLimit(.minutes(1)))
    func aBeaconIsLostAfterItsUnseenTimeAndEachSightingPostponesIt() async throws {
        let clock = ManualClock()
        let source = FakeReportSource()
        let manager = try testManager("timing-beacons", beaconSource: source, clock: NearbyClock(clock))
        let subscription = try await manager.subscribe(
            options: SubscribeOptions(
                beaconStrategy: BeaconStrategy(includeIBeacons: true, lostAfter: .seconds(10)), deviceTypes: .bleBeacons,
                ttl: nil))
        var events = subscription.events.makeAsyncIterator()
        let report = AdvertisingReport(address: "AA:BB", rssi: -60, data: hex(BeaconVectors.uidFull))

        source.continuation.yield(report)
        let found = await events.next()
        #expect(found?.kind == .found && found?.beacon?.address == "AA:BB")
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(6))
        source.continuation.yield(report)  // seen again at 6 s: no new timer, the first one restarts at 10 s
        source.continuation.yield(AdvertisingReport(address: "CC:DD", rssi: -70, data: hex(BeaconVectors.uidFull)))
        #expect(await events.next()?.beacon?.address == "CC:DD")  // both reports of 6 s were handled
        await clock.waitForSleepers(atLeast: 2)
        clock.advance(by: .seconds(4))  // 10 s: AA:BB's timer fires and restarts for the 6 s left (not lost)
        await clock.waitForSleepers(atLeast: 2)
        clock.advance(by: .seconds(6))  // 16 s: AA:BB lost; CC:DD (seen at 6 s) too
        let first = await events.next()
        let second = await events.next()
        #expect(first?.kind == .lost && second?.kind == .lost)
        #expect(Set([first?.beacon?.address, second?.beacon?.address]) == ["AA:BB", "CC:DD"])
        await subscription.cancel()
        #expect(clock.sleeperCount == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func aSubscriptionExpiresWhenItsTTLRunsOut() async throws {
        let clock = ManualClock()
        let manager = try testManager("timing-ttl", beaconSource: FakeReportSource(), clock: NearbyClock(clock))
        let expired = LockedValue(false)
        let subscription = try await manager.subscribe(
            options: SubscribeOptions(
                deviceTypes: .bleBeacons, ttl: .seconds(300), onExpired: { expired.withLock { $0 = true } }))
        let ended = Task {
            for await _ in subscription {}
            return true
        }
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(299))
        #expect(!subscription.isCancelled)
        clock.advance(by: .seconds(1))
        #expect(await ended.value)
        #expect(await eventually { expired.withLock { $0 } })
        #expect(subscription.isCancelled)
    }

    @Test(.timeLimit(.minutes(1)))
    func aPublicationExpiresWhenItsTTLRunsOut() async throws {
        let clock = ManualClock()
        let air = InMemoryMedium.Air()
        let manager = try testManager("timing-ttl", mediums: Self.inMemory(air), clock: NearbyClock(clock))
        let expired = LockedValue(false)
        let publication = try await manager.publish(
            Self.message,
            options: PublishOptions(
                strategy: MessageStrategy(mediums: .wifiLAN), ttl: .seconds(300),
                onExpired: { expired.withLock { $0 = true } }))
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(299))
        #expect(!publication.isCancelled)
        clock.advance(by: .seconds(1))
        #expect(await eventually { expired.withLock { $0 } && publication.isCancelled })
    }
}
