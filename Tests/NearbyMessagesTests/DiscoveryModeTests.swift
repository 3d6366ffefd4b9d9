import Foundation
import NearbyCore
import NearbyWire
import NearbyConnections
import NearbyTesting
import Testing

@testable import NearbyMessages

@Suite("Discovery modes", .timeLimit(.minutes(5)))
struct DiscoveryModeTests {
    @Test("the interest advertisement, byte by byte; earlier versions cannot read it as a message")
    func interestBytes() throws {
        #expect(InterestAdvertisement(subscriberScans: true).bytes == [0x4D, 0x14, 0x01])
        #expect(InterestAdvertisement(subscriberScans: false).bytes == [0x4D, 0x14, 0x00])
        #expect(try InterestAdvertisement.decode([0x4D, 0x14, 0xFF]).subscriberScans)
        #expect(try !InterestAdvertisement.decode([0x4D, 0x14, 0xFE]).subscriberScans)
        for bad: [UInt8] in [[0x4D, 0x14], [0x4D, 0x14, 0, 0], [0x4D, 0x10, 0], [0x4D, 0x24, 0], [0x4D, 0x13, 0], [0x4E, 0x14, 0]] {
            #expect(throws: NearbyError.self) { try InterestAdvertisement.decode(bad) }
        }
        // Version 1 envelopes have kinds 0-2 only: a subscriber of an earlier version ignores interest.
        #expect(throws: NearbyError.self) { try MessageEnvelope.decode([0x4D, 0x14, 0x01]) }
    }

    @Test("the delivery schedule: one delivery at a time, again after the interval, none to scanning subscriptions")
    func schedule() {
        var schedule = DeliverySchedule(interval: .seconds(5), watchdog: .seconds(30), publicationBroadcasts: true)
        #expect(schedule.found("scans", InterestAdvertisement(subscriberScans: true)).isEmpty)
        #expect(schedule.found("a", InterestAdvertisement(subscriberScans: false))
            == [.deliver("a"), .startTimer(.watchdog("a"), after: .seconds(30))])
        #expect(schedule.found("b", InterestAdvertisement(subscriberScans: false)).isEmpty)  // "a" is running
        #expect(schedule.finished("b").isEmpty)  // not the running one
        #expect(schedule.finished("a") == [
            .cancelTimer(.watchdog("a")), .startTimer(.redeliver("a"), after: .seconds(5)),
            .deliver("b"), .startTimer(.watchdog("b"), after: .seconds(30)),
        ])
        #expect(schedule.timerFired(.redeliver("a")).isEmpty)  // due, but "b" is running
        #expect(schedule.timerFired(.watchdog("b")) == [.abandon("b")])
        #expect(schedule.lost("b") == [.cancelTimer(.redeliver("b"))])
        // "b" is gone: its delivery ends without another being scheduled; "a" is due.
        #expect(schedule.finished("b") == [
            .cancelTimer(.watchdog("b")), .deliver("a"), .startTimer(.watchdog("a"), after: .seconds(30)),
        ])
        #expect(schedule.interested == ["a"])

        var scanOnly = DeliverySchedule(interval: .seconds(5), publicationBroadcasts: false)
        #expect(scanOnly.found("scans", InterestAdvertisement(subscriberScans: true)).first == .deliver("scans"))
    }

    @Test("modes are checked: empty is refused, plain endpoint info needs broadcast")
    func checks() async throws {
        let manager = try testManager("modes")
        #expect(await nearbyErrorCode {
            _ = try await manager.publish(Message(text: "x"), options: PublishOptions(strategy: MessageStrategy(mode: [])))
        } == .invalidArgument)
        #expect(await nearbyErrorCode {
            _ = try await manager.subscribe(options: SubscribeOptions(strategy: MessageStrategy(mode: [])))
        } == .invalidArgument)
        #expect(await nearbyErrorCode {
            _ = try await manager.publish(
                Message(text: "x"), options: PublishOptions(strategy: MessageStrategy(mode: .scan), plainEndpointInfo: true))
        } == .invalidArgument)
        var options = PublishOptions()
        options.discoveryMode = .scan
        #expect(options.strategy.mode == .scan)
        #expect(SubscribeOptions().discoveryMode == .both && MessageStrategy.Mode.both.rawValue == 3)
    }

    @Test("a publication may only scan (nothing advertised) and a subscription may only broadcast")
    func singleModes() async throws {
        let manager = try testManager("modes", mediums: Self.inMemory(InMemoryMedium.Air()))
        let publication = try await manager.publish(
            Message(text: "x"), options: PublishOptions(strategy: MessageStrategy(mediums: .wifiLAN, mode: .scan)))
        #expect(publication.mediums.isEmpty)
        #expect(publication.delivery != nil)
        let subscription = try await manager.subscribe(
            options: SubscribeOptions(strategy: MessageStrategy(mediums: .wifiLAN, mode: .broadcast)))
        #expect(subscription.deliveries.withLock { $0 } != nil)
        await publication.cancel()
        await subscription.cancel()
    }

    static func inMemory(_ air: InMemoryMedium.Air) -> MediumProvider {
        { kind, _ in
            guard kind == .wifiLAN else { throw NearbyError(.bluetoothUnavailable, "no BLE in this test") }
            return InMemoryMedium(air: air)
        }
    }

    @Test("every pairing of modes over an in-memory medium: found iff one side broadcasts and the other scans",
          .timeLimit(.minutes(1)))
    func matrixInMemory() async throws {
        let air = InMemoryMedium.Air()
        try await DiscoveryModeMatrix.run(mediums: .wifiLAN, within: 30) { try testManager("modes", mediums: Self.inMemory(air)) }
    }

    @Test("a large message: a scanning publication delivers its descriptor and the subscription fetches it",
          .timeLimit(.minutes(1)))
    func largeDeliveryInMemory() async throws {
        let air = InMemoryMedium.Air()
        var subscribeOptions = SubscribeOptions(strategy: MessageStrategy(mediums: .wifiLAN), ttl: nil)
        subscribeOptions.discoveryMode = .broadcast
        let subscription = try await testManager("large", mediums: Self.inMemory(air)).subscribe(options: subscribeOptions)
        var publishOptions = PublishOptions(strategy: MessageStrategy(mediums: .wifiLAN), ttl: nil)
        publishOptions.discoveryMode = .scan
        let message = Message(content: Data(repeating: 7, count: 3_000), namespace: "modes", type: "large")
        let publication = try await testManager("large", mediums: Self.inMemory(air)).publish(message, options: publishOptions)
        #expect(await eventually(45) { subscription.foundMessages == [message] })
        await publication.cancel()
        await subscription.cancel()
    }

    @Test("a delivered message is lost once deliveries stop", .timeLimit(.minutes(1)))
    func deliveredThenLost() async throws {
        let air = InMemoryMedium.Air()
        var subscribeOptions = SubscribeOptions(strategy: MessageStrategy(mediums: .wifiLAN), ttl: nil)
        subscribeOptions.discoveryMode = .broadcast
        subscribeOptions.deliveryLifetime = .seconds(2)
        let subscription = try await testManager("lost", mediums: Self.inMemory(air)).subscribe(options: subscribeOptions)
        let collector = EventCollector()
        let collecting = collector.collect(subscription)
        defer { collecting.cancel() }
        var publishOptions = PublishOptions(strategy: MessageStrategy(mediums: .wifiLAN), ttl: nil)
        publishOptions.discoveryMode = .scan
        publishOptions.redeliveryInterval = .milliseconds(300)
        let message = Message(text: "delivered", type: "d")
        let publication = try await testManager("lost", mediums: Self.inMemory(air)).publish(message, options: publishOptions)
        #expect(await eventually(30) { collector.found { $0 == message } })
        // Kept found across redeliveries: wait for several, then it is still there and found once.
        let delivery = try #require(publication.delivery)
        #expect(await eventually(30) { (delivery.completedDeliveries.values.max() ?? 0) >= 8 })
        #expect(!collector.lost { _ in true }, "\(collector.events)")
        await publication.cancel()
        #expect(await eventually(30) { collector.lost { $0 == message } }, "\(collector.events)")
        #expect(collector.events.filter { $0.kind == .found }.count == 1)
        await subscription.cancel()
    }
}
