import Foundation
import NearbyCore
import NearbyMessages
import NearbyMessagesService
import NearbyTesting
import NearbyTestSupport
import NearbyWire
import Testing

/// A real `MessageService` on an in-memory medium, served on a temporary Unix socket.
struct ServedService {
    let service: MessageService
    let server: MessageServiceServer
    let serving: Task<Void, Never>

    init(outputLimit: Int = MessageServiceServer.defaultOutputLimit) async throws {
        // Unix socket paths are short (108 bytes): keep the directory short.
        let socket = URL(fileURLWithPath: "/tmp/nsvc-\(UUID().uuidString.prefix(8))/s.sock")
        service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil)
        server = try await MessageServiceServer.bind(socketPath: socket, service: service, outputLimit: outputLimit)
        let server = self.server
        serving = Task { await server.run() }
    }

    var socketPath: URL { server.socketPath }

    func stop() async {
        await server.close()
        await serving.value
        await service.shutdown()
    }
}

/// `ServiceMessageManager`, the app-facing client, end to end against a real service over its socket.
@Suite("Service message manager", .timeLimit(.minutes(5)))
struct ServiceMessageManagerTests {
    @Test("publish and subscribe through the service: found on the stream and the handlers, list, lost on cancel, the stream ends on cancel", .timeLimit(.minutes(1)))
    func publishSubscribeList() async throws {
        let served = try await ServedService()
        let publisher = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: served.socketPath)
        let subscriber = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: served.socketPath)
        let hello = Message(text: "hello", namespace: "ns", type: "t")
        let publication = try await publisher.publish(hello)
        #expect(publication.handle.hasPrefix("pub-") && publication.message == hello)

        let handled = LockedValue<[String]>([])
        let subscription = try await subscriber.subscribe(
            options: ServiceSubscribeOptions(filter: try .namespacedType("ns", nil)),
            onFound: { message in handled.withLock { $0.append("found \(message.text ?? "")") } },
            onLost: { message in handled.withLock { $0.append("lost \(message.text ?? "")") } })
        var events = subscription.events.makeAsyncIterator()
        let found = try #require(try await events.next())
        #expect(found.kind == .found && found.message == hello)
        #expect(subscription.foundMessages == [hello])

        let listed = try await subscriber.list()
        #expect(listed.map(\.handle) == [publication.handle, subscription.handle])
        #expect(listed.map(\.background) == [false, false])

        try await publication.cancel()
        let lost = try #require(try await events.next())
        #expect(lost.kind == .lost && lost.message == hello)
        #expect(try await eventually(within: 20, "the handlers") { handled.withLock { $0.count == 2 ? $0 : nil } }
            == ["found hello", "lost hello"])

        try await subscription.cancel()
        #expect(try await events.next() == nil)  // ends, without an error
        #expect(try await subscriber.list().isEmpty)
        await publisher.close()
        await subscriber.close()
        await served.stop()
    }

    @Test("a subscription another client unsubscribes ends the owner's stream without an error", .timeLimit(.minutes(1)))
    func unsubscribedElsewhereEndsTheStream() async throws {
        let served = try await ServedService()
        let owner = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: served.socketPath)
        let other = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: served.socketPath)
        let subscription = try await owner.subscribe()
        try await other.unsubscribe(handle: subscription.handle)
        var events = subscription.events.makeAsyncIterator()
        #expect(try await events.next() == nil)  // ends, without an error
        #expect(try await owner.list().isEmpty)
        await owner.close()
        await other.close()
        await served.stop()
    }

    @Test("no service: connect throws mediumUnavailable naming the socket", .timeLimit(.minutes(1)))
    func noService() async throws {
        let path = URL(fileURLWithPath: "/tmp/nsvc-none-\(UUID().uuidString.prefix(8))/s.sock")
        let error = try await #require(throws: NearbyError.self) {
            _ = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: path)
        }
        #expect(error.code == .mediumUnavailable && error.message.contains(path.path), "\(error)")
        let empty = try await #require(throws: NearbyError.self) {
            _ = try await ServiceMessageManager.connect(serviceID: "", socketPath: path)
        }
        #expect(empty.code == .invalidArgument)
    }

    @Test("the service stops: the found/lost stream throws endpointIoError, onDisconnect is called, requests fail", .timeLimit(.minutes(1)))
    func serviceGoesAway() async throws {
        let served = try await ServedService()
        let disconnected = LockedValue<NearbyError?>(nil)
        let nearby = try await ServiceMessageManager.connect(
            serviceID: "svc", socketPath: served.socketPath, onDisconnect: { error in disconnected.withLock { $0 = error } })
        let subscription = try await nearby.subscribe()
        let ended = Task { () -> (any Error)? in
            do {
                for try await _ in subscription.events {}
                return nil
            } catch {
                return error
            }
        }
        await served.stop()
        let error = try #require(await ended.value as? NearbyError)
        #expect(error.code == .endpointIoError, "\(error)")
        #expect(try await eventually(within: 20, "onDisconnect") { disconnected.withLock { $0 } }.code == .endpointIoError)
        let refused = try await #require(throws: NearbyError.self) { _ = try await nearby.publish(Message(text: "late")) }
        #expect(refused.code == .endpointIoError)
        // A subscription followed after the loss ends at once with the same error.
        await #expect(throws: NearbyError.self) { _ = try await nearby.subscription(handle: subscription.handle) }
        await nearby.close()
    }

    @Test("background items outlive the connection; a later one lists them, follows the subscription (found replayed) and stops them", .timeLimit(.minutes(1)))
    func backgroundAcrossConnections() async throws {
        let served = try await ServedService()
        let first = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: served.socketPath)
        let publication = try await first.publish(Message(text: "stays"), options: ServicePublishOptions(background: true))
        let subscription = try await first.subscribe(options: ServiceSubscribeOptions(background: true))
        await first.close()

        let second = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: served.socketPath)
        let entries = try await second.list()
        #expect(entries.map(\.handle) == [publication.handle, subscription.handle] && entries.allSatisfy(\.background))
        let followed = try await second.subscription(handle: subscription.handle)
        var events = followed.events.makeAsyncIterator()
        let found = try #require(try await events.next())
        #expect(found.kind == .found && found.message.text == "stays")
        try await second.unpublish(handle: publication.handle)
        #expect(try await events.next()?.kind == .lost)
        try await followed.cancel()
        #expect(try await events.next() == nil)
        #expect(try await second.list().isEmpty)
        let missing = try await #require(throws: NearbyError.self) { try await second.unpublish(handle: publication.handle) }
        #expect(missing.code == .invalidArgument && missing.message.contains(publication.handle))

        let twoPairs = try MessageFilter().including(namespace: "a", type: nil).including(namespace: "b", type: nil)
        let refused = try await #require(throws: NearbyError.self) {
            _ = try await second.subscribe(options: ServiceSubscribeOptions(filter: twoPairs))
        }
        #expect(refused.code == .invalidArgument)
        await second.close()
        await served.stop()
    }
}
