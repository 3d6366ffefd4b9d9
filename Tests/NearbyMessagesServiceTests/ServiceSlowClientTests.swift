import Foundation
import Logging
import NearbyCore
import NearbyMessages
import NearbyMessagesService
import NearbyTesting
import NearbyTestSupport
import NearbyWire
import Testing

/// Log messages at warning level and above, recorded.
final class RecordedWarnings: Sendable {
    private let messages = LockedValue<[String]>([])
    var all: [String] { messages.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test.service") { _ in Handler(record: { message in self.messages.withLock { $0.append(message) } }) }
    }

    private struct Handler: LogHandler {
        let record: @Sendable (String) -> Void
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            record("\(event.message) \(event.metadata ?? [:])")
        }
    }
}

/// A client that never reads must not hold up the service or the other clients.
@Suite("Message service slow client", .timeLimit(.minutes(5)))
struct ServiceSlowClientTests {
    @Test("a client that never reads is disconnected once its output passes the limit (logged); another gets every event", .timeLimit(.minutes(1)))
    func neverReadingClient() async throws {
        let warnings = RecordedWarnings()
        let socket = URL(fileURLWithPath: "/tmp/nsvc-\(UUID().uuidString.prefix(8))/s.sock")
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil)
        let server = try await MessageServiceServer.bind(
            socketPath: socket, service: service, outputLimit: 64 * 1024, logger: warnings.logger)
        let serving = Task { await server.run() }

        let subscriber = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: socket)
        let publisher = try await ServiceMessageManager.connect(serviceID: "svc", socketPath: socket)
        let subscription = try await subscriber.subscribe()
        var events = subscription.events.makeAsyncIterator()
        // Eight messages of 40 kB: each event line is about 120 kB (text and hex), about 1 MB in all, far beyond
        // what the socket buffers (about 200 kB) plus the 64 kB limit.
        let messages = (0..<8).map { Message(text: String(repeating: Character(String($0)), count: 40_000)) }
        var publications: [ServicePublication] = []
        for message in messages { publications.append(try await publisher.publish(message)) }
        var found: Set<Message> = []
        while found.count < messages.count {
            let event = try #require(try await events.next())
            if event.kind == .found { found.insert(event.message) }
        }

        // The slow client watches everything (the service replays the eight found messages to it) and never reads.
        let slow = try RawSocket(path: socket.path)
        try slow.send("{\"id\":1,\"op\":\"watch\"}\n")
        _ = try await eventually(within: 20, "the slow client to be disconnected and logged") {
            warnings.all.first { $0.contains("does not read") }
        }
        // The service goes on: the other client gets every lost event and answers.
        for publication in publications { try await publication.cancel() }
        var lost: Set<Message> = []
        while lost.count < messages.count {
            let event = try #require(try await events.next())
            if event.kind == .lost { lost.insert(event.message) }
        }
        #expect(lost == Set(messages))
        #expect(try await subscriber.list().map(\.handle) == [subscription.handle])

        // What the slow client gets, once it reads at last, is a prefix of its lines and then the end of the stream.
        var lines = 0
        while try slow.readLine(allowEOF: true) != nil { lines += 1 }
        #expect(lines < messages.count + 1, "the slow client got all \(lines) lines")

        await subscriber.close()
        await publisher.close()
        await server.close()
        await serving.value
        await service.shutdown()
    }
}
