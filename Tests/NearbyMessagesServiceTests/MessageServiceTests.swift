import Foundation
import NearbyCore
import NearbyMessages
import NearbyMessagesService
import NearbyTesting
import NearbyTestSupport
import NearbyWire
import Testing

/// The service core in process, on an in-memory medium.
@Suite("Message service core", .timeLimit(.minutes(5)))
struct MessageServiceTests {
    static let hello = Message(text: "hello", namespace: "ns", type: "t")

    static func publish(_ message: Message, background: Bool = false, id: Int = 1) -> ServiceRequest {
        ServiceRequest(
            id: id, op: .publish, serviceID: "svc", contentHex: Hex.encode(message.content), namespace: message.namespace,
            type: message.type, background: background)
    }

    @Test("one client publishes, another subscribes and gets found; the publisher disconnects and it is lost", .timeLimit(.minutes(1)))
    func foundAndLostAcrossClients() async throws {
        let notifier = RecordingNotifier()
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil, notifier: notifier)
        let publisher = await service.connect { _ in }
        let subscriberEvents = EventRecorder()
        let subscriber = await service.connect(subscriberEvents.sink)

        let published = await service.handle(Self.publish(Self.hello, id: 1), from: publisher)
        #expect(published.ok && published.id == 1 && published.handle?.hasPrefix("pub-") == true, "\(published)")
        let subscribed = await service.handle(ServiceRequest(id: 2, op: .subscribe, serviceID: "svc", namespace: "ns"), from: subscriber)
        let handle = try #require(subscribed.handle)
        let found = try await subscriberEvents.waitFor("found") { $0.kind == .found }
        #expect(found.decodedMessage == Self.hello && found.subscription == handle && found.serviceID == "svc")
        _ = try await notifier.recorder.waitFor("a notification") { $0.kind == .found }

        await service.disconnect(publisher)  // not background: the publication stops with its client
        let lost = try await subscriberEvents.waitFor("lost") { $0.kind == .lost }
        #expect(lost.decodedMessage == Self.hello)
        #expect(await service.entries.map(\.handle) == [handle])
        await service.shutdown()
    }

    @Test("bad requests get clear errors and change nothing", .timeLimit(.minutes(1)))
    func badRequests() async throws {
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil)
        let client = await service.connect { _ in }
        let cases: [(ServiceRequest, String, String)] = [
            (ServiceRequest(id: 1, op: .publish, contentHex: "00"), "invalidArgument", "service_id"),
            (ServiceRequest(id: 2, op: .publish, serviceID: "svc", contentHex: "zz"), "invalidArgument", "content_hex"),
            (ServiceRequest(id: 3, op: .publish, serviceID: "svc", contentHex: "00", namespace: "a*"), "invalidMessageLabel", "'*'"),
            (ServiceRequest(id: 4, op: .unpublish, handle: "pub-nope"), "invalidArgument", "no publication named pub-nope"),
            (ServiceRequest(id: 5, op: .subscribe, serviceID: "svc", ttl: -1), "invalidArgument", "ttl"),
            (ServiceRequest(id: 6, op: .watch, handle: "sub-nope"), "invalidArgument", "no subscription named"),
        ]
        for (request, code, text) in cases {
            let response = await service.handle(request, from: client)
            #expect(!response.ok && response.id == request.id)
            #expect(response.error?.code == code && response.error?.message.contains(text) == true, "\(response)")
        }
        #expect(await service.entries.isEmpty)
        await service.shutdown()
    }

    @Test("background items outlive their client, are saved, and a new service restores them: found again", .timeLimit(.minutes(1)))
    func restoreAfterRestart() async throws {
        let air = InMemoryMedium.Air()
        let stateURL = try temporaryDirectory("restore").appendingPathComponent("service.json")
        let first = try inMemoryService(air, stateFile: stateURL)
        let client = await first.connect { _ in }
        let pub = await first.handle(Self.publish(Self.hello, background: true), from: client)
        let sub = await first.handle(ServiceRequest(id: 2, op: .subscribe, serviceID: "svc", background: true), from: client)
        let attached = await first.handle(ServiceRequest(id: 3, op: .subscribe, serviceID: "svc"), from: client)
        #expect(pub.ok && sub.ok && attached.ok)
        await first.disconnect(client)
        #expect(await first.entries.map(\.handle) == [pub.handle, sub.handle].compactMap { $0 })
        let saved = try ServiceStateFile(url: stateURL).load().state.entries
        #expect(saved.map(\.handle) == [pub.handle, sub.handle].compactMap { $0 })
        #expect(saved.allSatisfy { $0.background })
        await first.shutdown()

        let second = try inMemoryService(air, stateFile: stateURL)
        #expect(await second.restore().isEmpty)
        #expect(await second.entries.map(\.handle) == [pub.handle, sub.handle].compactMap { $0 })
        let watcher = EventRecorder()
        let watching = await second.connect(watcher.sink)
        #expect(await second.handle(ServiceRequest(id: 1, op: .watch), from: watching).ok)
        let found = try await watcher.waitFor("the restored subscription to find the restored publication") { $0.kind == .found }
        #expect(found.subscription == sub.handle && found.decodedMessage == Self.hello)

        // Unsubscribing removes it from the state file too.
        #expect(await second.handle(ServiceRequest(id: 2, op: .unsubscribe, handle: sub.handle), from: watching).ok)
        #expect(try ServiceStateFile(url: stateURL).load().state.entries.map(\.handle) == [pub.handle])
        await second.shutdown()
    }

    @Test("a corrupt state file is reported and moved aside; the service starts empty and saves anew", .timeLimit(.minutes(1)))
    func corruptStateFile() async throws {
        let stateURL = try temporaryDirectory("corrupt").appendingPathComponent("service.json")
        try Data("{ not json".utf8).write(to: stateURL)
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: stateURL)
        let problems = await service.restore()
        #expect(problems.count == 1 && problems.first?.code == .malformedMessage)
        #expect(problems.first?.message.contains("moved it to") == true)
        #expect(await service.entries.isEmpty)
        let client = await service.connect { _ in }
        #expect(await service.handle(Self.publish(Self.hello, background: true), from: client).ok)
        #expect(try ServiceStateFile(url: stateURL).load().state.entries.count == 1)
        let names = try FileManager.default.contentsOfDirectory(atPath: stateURL.deletingLastPathComponent().path)
        #expect(names.contains { $0.hasPrefix("service.json.corrupt-") })
        await service.shutdown()
    }

    @Test("saved items whose TTL ran out are dropped at restore", .timeLimit(.minutes(1)))
    func expiredAtRestore() async throws {
        let stateURL = try temporaryDirectory("expired").appendingPathComponent("service.json")
        try ServiceStateFile(url: stateURL).save(ServiceState(entries: [
            ServiceEntry(
                handle: "sub-old", kind: .subscription, serviceID: "svc", background: true,
                expiresAt: Date(timeIntervalSinceNow: -60))
        ]))
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: stateURL)
        #expect(await service.restore().isEmpty)
        #expect(await service.entries.isEmpty)
        #expect(try ServiceStateFile(url: stateURL).load().state.entries.isEmpty)
    }

    @Test("a background item whose TTL runs out stops and leaves the state file", .timeLimit(.minutes(1)))
    func expiresWhileRunning() async throws {
        let clock = ManualClock()
        let stateURL = try temporaryDirectory("ttl").appendingPathComponent("service.json")
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: stateURL, clock: NearbyClock(clock))
        let client = await service.connect { _ in }
        var request = Self.publish(Self.hello, background: true)
        request.ttl = 30
        let published = await service.handle(request, from: client)
        let saved = try #require(try ServiceStateFile(url: stateURL).load().state.entries.first)
        #expect(saved.handle == published.handle && saved.expiresAt != nil)
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(30))
        _ = try await eventually(within: 20, "the expired publication to be dropped") {
            await service.entries.isEmpty ? true : nil
        }
        #expect(try ServiceStateFile(url: stateURL).load().state.entries.isEmpty)
    }

    @Test("a subscription that stops in the service says so to the clients following it: TTL, unsubscribed by another client, owner gone", .timeLimit(.minutes(1)))
    func subscriptionEndedEvents() async throws {
        let clock = ManualClock()
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil, clock: NearbyClock(clock))
        let ownerEvents = EventRecorder()
        let owner = await service.connect(ownerEvents.sink)
        let watcherEvents = EventRecorder()
        let watcher = await service.connect(watcherEvents.sink)
        func ended(_ recorder: EventRecorder, _ handle: String) async throws -> ServiceEvent {
            try await recorder.waitFor("subscription_ended of \(handle)") { $0.isSubscriptionEnd && $0.subscription == handle }
        }

        // The TTL runs out (the manager's clock is advanced until the subscription's timer has fired).
        let expiring = try #require(
            await service.handle(ServiceRequest(id: 1, op: .subscribe, serviceID: "svc", ttl: 30), from: owner).handle)
        await clock.waitForSleepers(atLeast: 1)
        let expired = try await eventually(within: 20, "the subscription to expire") {
            clock.advance(by: .seconds(30))
            return ownerEvents.events.first { $0.isSubscriptionEnd && $0.subscription == expiring }
        }
        #expect(expired.reason == "expired" && expired.serviceID == "svc" && expired.kind == nil, "\(expired)")

        // Unsubscribed by another client that watches it: both hear of it.
        let second = try #require(
            await service.handle(ServiceRequest(id: 2, op: .subscribe, serviceID: "svc"), from: owner).handle)
        #expect(await service.handle(ServiceRequest(id: 3, op: .watch, handle: second), from: watcher).ok)
        #expect(await service.handle(ServiceRequest(id: 4, op: .unsubscribe, handle: second), from: watcher).ok)
        #expect(try await ended(ownerEvents, second).reason == "unsubscribed")
        #expect(try await ended(watcherEvents, second).reason == "unsubscribed")

        // The owner of a subscription made without background goes: its watcher hears why.
        let third = try #require(
            await service.handle(ServiceRequest(id: 5, op: .subscribe, serviceID: "svc"), from: owner).handle)
        #expect(await service.handle(ServiceRequest(id: 6, op: .watch, handle: third), from: watcher).ok)
        await service.disconnect(owner)
        #expect(try await ended(watcherEvents, third).reason == "owner_disconnected")
        // The events' JSON: found/lost fields unchanged, the reason only on the end.
        let line = try ServiceCodec.encode(ServiceEvent.subscriptionEnded(third, serviceID: "svc", reason: .ownerDisconnected))
        #expect(line.contains("\"event\":\"subscription_ended\"") && line.contains("\"reason\":\"owner_disconnected\""), "\(line)")
        #expect(!(try ServiceCodec.encode(ServiceEvent(.found, Self.hello, subscription: third, serviceID: "svc"))).contains("reason"))
        await service.shutdown()
    }
}
