import Foundation
import Logging
import NearbyConnections
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyMessages

/// Publishers and subscribers (separate managers, so separate endpoints) over real Wi-Fi LAN: Avahi and TCP inside
/// the private network namespace of scripts/with-test-network.sh.
@Suite(
    "Nearby Messages over Wi-Fi LAN", .serialized,
    .enabled(if: inTestNetwork, "needs scripts/with-test-network.sh (private avahi-daemon)"), .timeLimit(.minutes(5)))
struct WiFiLANMessagesTests {
    static let wifiOnly = MessageStrategy(mediums: .wifiLAN)

    static func serviceID(_ tag: String) -> String { "msg-\(tag)-\(UUID().uuidString.prefix(8))" }

    @Test("publish → found with content, namespace and type; unpublish → lost")
    func publishFoundThenLost() async throws {
        try await withTestTimeout(90, "publish/subscribe found and lost") {
            let service = Self.serviceID("basic")
            let publisher = try testManager(service)
            let subscriber = try testManager(service)
            let subscription = try await subscriber.subscribe(options: SubscribeOptions(strategy: Self.wifiOnly))
            let collector = EventCollector()
            let collecting = collector.collect(subscription)
            defer { collecting.cancel() }
            let message = Message(text: "hello nearby", namespace: "greetings", type: "text")
            let publication = try await publisher.publish(message, options: PublishOptions(strategy: Self.wifiOnly))
            #expect(await eventually(60) { collector.found { $0 == message } }, "\(collector.events)")
            let found = try #require(collector.events.first { $0.kind == .found })
            #expect(found.message.text == "hello nearby")
            #expect(found.message.namespace == "greetings")
            #expect(found.message.type == "text")
            await publication.cancel()
            #expect(await eventually(60) { collector.lost { $0 == message } }, "\(collector.events)")
            #expect(collector.events.filter { $0.kind == .found }.count == 1)
            await subscription.cancel()
        }
    }

    @Test("a filter excludes other namespaces and types; identical publications are found once")
    func filterAndDuplicates() async throws {
        try await withTestTimeout(90, "filtered subscription") {
            let service = Self.serviceID("filter")
            let publisher = try testManager(service)
            let subscriber = try testManager(service)
            let filter = try MessageFilter.namespacedType("wanted", "a")
            let subscription = try await subscriber.subscribe(options: SubscribeOptions(strategy: Self.wifiOnly, filter: filter))
            let collector = EventCollector()
            let collecting = collector.collect(subscription)
            defer { collecting.cancel() }
            let wanted = Message(text: "yes", namespace: "wanted", type: "a")
            let options = PublishOptions(strategy: Self.wifiOnly)
            let publications = [
                try await publisher.publish(Message(text: "no-ns", namespace: "other", type: "a"), options: options),
                try await publisher.publish(Message(text: "no-type", namespace: "wanted", type: "b"), options: options),
                try await publisher.publish(wanted, options: options),
                try await publisher.publish(wanted, options: options),
            ]
            #expect(await eventually(60) { collector.found { $0 == wanted } })
            // Once the subscription has handled all four advertisements, check that nothing else came through.
            #expect(await eventually(60) { subscription.handledEndpoints.withLock { $0.found.count } >= 4 })
            #expect(subscription.foundMessages == [wanted])
            #expect(collector.events.allSatisfy { $0.message == wanted }, "\(collector.events)")
            #expect(collector.events.filter { $0.kind == .found }.count == 1, "\(collector.events)")
            await publications[2].cancel()
            // Handled as gone (with the default lostAfter of zero a loss would be reported right then): not lost.
            #expect(await eventually(60) { subscription.handledEndpoints.withLock { $0.lost.count } >= 1 })
            #expect(subscription.foundMessages == [wanted])
            #expect(!collector.lost { _ in true }, "lost while a duplicate is still published: \(collector.events)")
            await publications[3].cancel()
            #expect(await eventually(60) { collector.lost { $0 == wanted } })
            for publication in publications { await publication.cancel() }
            await subscription.cancel()
        }
    }

    @Test("a 50 KB message is fetched through a connection")
    func largeMessage() async throws {
        try await withTestTimeout(120, "large message") {
            let service = Self.serviceID("large")
            let publisher = try testManager(service)
            let subscriber = try testManager(service)
            var generator = SystemRandomNumberGenerator()
            let content = Data((0..<50_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let message = Message(content: content, namespace: "files", type: "blob")
            let subscription = try await subscriber.subscribe(options: SubscribeOptions(strategy: Self.wifiOnly))
            let collector = EventCollector()
            let collecting = collector.collect(subscription)
            defer { collecting.cancel() }
            let publication = try await publisher.publish(message, options: PublishOptions(strategy: Self.wifiOnly))
            #expect(await eventually(90) { collector.found { _ in true } }, "\(collector.events)")
            let found = try #require(collector.events.first { $0.kind == .found })
            #expect(found.message.content.count == 50_000)
            #expect(found.message == message)
            await publication.cancel()
            #expect(await eventually(60) { collector.lost { $0 == message } })
            await subscription.cancel()
        }
    }

    @Test("several publications at once, large and small, reach two subscribers")
    func severalPublications() async throws {
        try await withTestTimeout(150, "several publications") {
            let service = Self.serviceID("many")
            let publisher = try testManager(service)
            let options = SubscribeOptions(strategy: Self.wifiOnly)
            let subscribers = [try testManager(service), try testManager(service)]
            var subscriptions: [Subscription] = []
            var collectors: [EventCollector] = []
            var tasks: [Task<Void, Never>] = []
            for subscriber in subscribers {
                let subscription = try await subscriber.subscribe(options: options)
                let collector = EventCollector()
                tasks.append(collector.collect(subscription))
                subscriptions.append(subscription)
                collectors.append(collector)
            }
            defer { for task in tasks { task.cancel() } }
            let messages = [
                Message(text: "small one", type: "s"), Message(text: "small two", type: "s"),
                Message(content: Data(repeating: 1, count: 2_000), type: "l"),
                Message(content: Data(repeating: 2, count: 30_000), type: "l"),
            ]
            var publications: [Publication] = []
            for message in messages {
                publications.append(try await publisher.publish(message, options: PublishOptions(strategy: Self.wifiOnly)))
            }
            for collector in collectors {
                #expect(await eventually(120) { messages.allSatisfy { m in collector.found { $0 == m } } }, "\(collector.events)")
            }
            for publication in publications { await publication.cancel() }
            for collector in collectors {
                #expect(await eventually(60) { messages.allSatisfy { m in collector.lost { $0 == m } } }, "\(collector.events)")
                #expect(collector.events.filter { $0.kind == .found }.count == messages.count)
            }
            for subscription in subscriptions { await subscription.cancel() }
        }
    }
}

extension WiFiLANMessagesTests {
    @Test("interop with Google's migration guide: plain endpoint info is published and subscribed without the envelope")
    func plainEndpointInfo() async throws {
        try await withTestTimeout(90, "plain endpoint info") {
            let service = Self.serviceID("plain")
            // A plain Nearby Connections advertiser, as an Android app following the migration guide would be.
            let connections = ConnectionManager(
                serviceID: service, strategy: .pointToPoint,
                options: ConnectionOptions(logger: Logger(label: "plain")))
            let advertiser = Advertiser(connectionManager: connections)
            try await advertiser.startAdvertising(using: Data("raw hello".utf8))
            let published = try await testManager(service).publish(
                Message(text: "plain from us"), options: PublishOptions(strategy: Self.wifiOnly, plainEndpointInfo: true))

            let subscriber = try testManager(service)
            let plain = try await subscriber.subscribe(
                options: SubscribeOptions(strategy: Self.wifiOnly, includePlainEndpointInfo: true))
            let strict = try await subscriber.subscribe(options: SubscribeOptions(strategy: Self.wifiOnly))
            let plainCollector = EventCollector()
            let strictCollector = EventCollector()
            let tasks = [plainCollector.collect(plain), strictCollector.collect(strict)]
            defer { for task in tasks { task.cancel() } }
            #expect(await eventually(60) {
                plainCollector.found { $0.text == "raw hello" } && plainCollector.found { $0.text == "plain from us" }
            }, "\(plainCollector.events)")
            #expect(strictCollector.events.isEmpty, "\(strictCollector.events)")
            let code = await nearbyErrorCode {
                _ = try await subscriber.publish(
                    Message(text: "x", type: "typed"), options: PublishOptions(strategy: Self.wifiOnly, plainEndpointInfo: true))
            }
            #expect(code == .invalidArgument)
            await published.cancel()
            await connections.shutdown()
            withExtendedLifetime(advertiser) {}
            await plain.cancel()
            await strict.cancel()
        }
    }
}
