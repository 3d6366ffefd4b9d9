import Foundation
import Logging
import NearbyCore
import NearbyMessages
import NearbyTesting
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyMessagesService

#if canImport(Glibc)
import Glibc
#endif

/// The service against large and hostile messages, floods and its own limits (issue 22).
@Suite("Message service hardening", .timeLimit(.minutes(2)))
struct ServiceHardeningTests {
    /// A message of 100 KiB of byte 0x01, which JSON escapes as `\u0001` (6 bytes each), with the longest labels.
    static let poison = Message(
        content: Data(repeating: 0x01, count: Message.maximumContentSize), namespace: String(repeating: "\u{1}", count: 100),
        type: String(repeating: "\u{1}", count: 15))

    @Test("the worst event line (100 KiB of 0x01, escaped 6 times over) fits the event bound and the client's line cap")
    func worstEventLineFits() throws {
        var worst = Self.poison
        // Labels a stranger can send (255 bytes each) though a publication here could not.
        worst.namespace = String(repeating: "\u{1}", count: 255)
        worst.type = String(repeating: "\u{1}", count: 255)
        let line = try ServiceCodec.encode(
            ServiceReply.event(ServiceEvent(.found, worst, subscription: "sub-12345678", serviceID: "svc")))
        #expect(line.utf8.count > ServiceCodec.maximumLineLength)  // what broke every client before
        #expect(line.utf8.count <= ServiceCodec.maximumEventLineLength)
        #expect(ServiceCodec.maximumEventLineLength <= ServiceCodec.maximumReplyLineLength)
        guard case .event(let decoded) = try ServiceCodec.decodeReply(from: Array(line.utf8)) else {
            Issue.record("not an event")
            return
        }
        #expect(decoded.decodedMessage == worst)
    }

    @Test("a list of as many 100 KiB publications as the service takes fits the client's line cap")
    func worstListFits() throws {
        let content = Hex.encode(Array(repeating: 0x01, count: Message.maximumContentSize))
        let entry = ServiceEntry(
            handle: "pub-12345678", kind: .publication, serviceID: String(repeating: "s", count: 255),
            namespace: String(repeating: "\u{1}", count: 100), type: String(repeating: "\u{1}", count: 15),
            contentHex: content, background: true, expiresAt: Date())
        let response = ServiceResponse(id: 1, entries: Array(repeating: entry, count: ServiceLimits().maxItems))
        let line = try ServiceCodec.encode(ServiceReply.response(response))
        #expect(line.utf8.count > 4 * ServiceCodec.maximumLineLength)
        #expect(line.utf8.count <= ServiceCodec.maximumReplyLineLength)
    }

    @Test("six 100 KiB poison messages: a subscriber over the socket and a later watch get them all and stay connected")
    func largeMessagesKeepClientsConnected() async throws {
        let socket = URL(fileURLWithPath: "/tmp/nsvc-\(UUID().uuidString.prefix(8))/s.sock")
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil)
        let server = try await MessageServiceServer.bind(socketPath: socket, service: service)
        let serving = Task { await server.run() }
        let subscriber = try await MessageServiceClient.connect(socketPath: socket)
        let subscribed = try await subscriber.send(ServiceRequest(id: 0, op: .subscribe, serviceID: "svc"))
        #expect(subscribed.ok)
        var events = subscriber.events.makeAsyncIterator()

        // Six distinct poison messages from another client (in the service, as a stranger's would be found).
        let publisher = await service.connect { _ in }
        var expected: Set<Message> = []
        for index in 0..<6 {
            var message = Self.poison
            message.content[0] = UInt8(index + 2)
            expected.insert(message)
            let response = await service.handle(
                ServiceRequest(
                    id: index, op: .publish, serviceID: "svc", contentHex: Hex.encode(message.content),
                    namespace: message.namespace, type: message.type),
                from: publisher)
            #expect(response.ok, "\(response)")
        }
        var found: Set<Message> = []
        while found.count < expected.count {
            let event = try #require(await events.next(), "the subscriber was disconnected: \(String(describing: subscriber.disconnection))")
            if event.kind == .found, let message = event.decodedMessage { found.insert(message) }
        }
        #expect(found == expected)

        // A watcher: its catch-up is 6 lines of about 800 KiB (4.8 MiB, over the 4 MiB output limit).
        let watcher = try await MessageServiceClient.connect(socketPath: socket)
        #expect(try await watcher.send(ServiceRequest(id: 0, op: .watch)).ok)
        var watched: Set<Message> = []
        var watcherEvents = watcher.events.makeAsyncIterator()
        while watched.count < expected.count {
            let event = try #require(await watcherEvents.next(), "the watcher was disconnected: \(String(describing: watcher.disconnection))")
            if event.kind == .found, let message = event.decodedMessage { watched.insert(message) }
        }
        #expect(watched == expected && watcher.disconnection == nil)
        let listed = try await watcher.send(ServiceRequest(id: 0, op: .list))
        #expect(listed.entries?.count == 7)
        #expect(subscriber.disconnection == nil && watcher.disconnection == nil)

        await watcher.close()
        await subscriber.close()
        await server.close()
        await serving.value
        await service.shutdown()
    }

    @Test("limits: items and service IDs are refused with limitExceeded; managers are released with their last item; duplicate handles refused")
    func serviceLimits() async throws {
        var limits = ServiceLimits()
        limits.maxItems = 3
        limits.maxServiceIDs = 2
        let service = MessageService(
            managerFactory: inMemoryManagers(InMemoryMedium.Air(), consentDirectory: try temporaryDirectory("consent")),
            strategy: MessageStrategy(mediums: .wifiLAN), limits: limits)
        let client = await service.connect { _ in }
        func subscribe(_ serviceID: String) async -> ServiceResponse {
            await service.handle(ServiceRequest(id: 1, op: .subscribe, serviceID: serviceID), from: client)
        }
        let a = await subscribe("a")
        let b = await subscribe("b")
        #expect(a.ok && b.ok)
        let third = await subscribe("c")
        #expect(third.error?.code == NearbyError.Code.limitExceeded.rawValue, "\(third)")
        let again = await subscribe("a")
        #expect(again.ok)
        let fourth = await subscribe("a")
        #expect(fourth.error?.code == NearbyError.Code.limitExceeded.rawValue, "\(fourth)")
        #expect(await service.serviceIDsInUse == ["a", "b"])
        let stopped = await service.handle(ServiceRequest(id: 2, op: .unsubscribe, handle: a.handle), from: client)
        #expect(stopped.ok)
        #expect(await service.serviceIDsInUse == ["a", "b"])  // "a" still has an item
        await service.disconnect(client)
        #expect(await service.serviceIDsInUse.isEmpty)

        let other = await service.connect { _ in }
        let entry = ServiceEntry(handle: "sub-0000abcd", kind: .subscription, serviceID: "a", background: true)
        try await service.start(entry, owner: other)
        await #expect(throws: NearbyError.self) { try await service.start(entry, owner: other) }
        #expect(await service.entries.count == 1)
        await service.shutdown()
    }

    @Test("desktop notifications are rate-limited: a burst of 5, then one per second; the rest dropped")
    func notificationRate() async throws {
        let notifier = RecordingNotifier()
        let clock = LockedValue(Date(timeIntervalSince1970: 1_000_000))
        let service = MessageService(
            managerFactory: inMemoryManagers(InMemoryMedium.Air(), consentDirectory: try temporaryDirectory("consent")),
            strategy: MessageStrategy(mediums: .wifiLAN), notifier: notifier, now: { clock.withLock { $0 } })
        let client = await service.connect { _ in }
        let subscribed = await service.handle(ServiceRequest(id: 1, op: .subscribe, serviceID: "svc"), from: client)
        let handle = try #require(subscribed.handle)
        for index in 0..<100 {
            await service.deliver(MessageEvent(kind: .found, message: Message(text: "m\(index)")), from: handle)
        }
        #expect(notifier.recorder.events.count == 5)
        clock.withLock { $0 += 1 }
        for index in 0..<10 {
            await service.deliver(MessageEvent(kind: .found, message: Message(text: "n\(index)")), from: handle)
        }
        #expect(notifier.recorder.events.count == 6)
        await service.shutdown()
    }

    @Test("notify-send: stranger text follows --, bidi and control scalars are spaces, at most 4 processes at once")
    func notifySendHardening() async throws {
        let directory = try temporaryDirectory("notify-flood")
        let record = directory.appendingPathComponent("calls")
        let release = directory.appendingPathComponent("release")
        let script = directory.appendingPathComponent("notify-send")
        // Records its arguments, then waits until the test lets it go (bounded: 30 s).
        try """
            #!/bin/sh
            printf '%s\\n' "$*" >> '\(record.path)'
            i=0; while [ ! -e '\(release.path)' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
            """.write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        let notifier = NotifySendNotifier(executable: script)
        let evil = Message(text: "--hint=string:x-evil:1 \u{202E}gpj.exe\u{1B}[2J", namespace: "ns\u{2066}", type: "t")
        for _ in 0..<20 {
            notifier.notify(ServiceEvent(.found, evil, subscription: "sub-1", serviceID: "svc"))
        }
        let lines = try await eventually(within: 20, "4 notify-send processes to start") { () -> [String]? in
            let text = (try? String(contentsOf: record, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").map(String.init)
            return lines.count >= 4 ? lines : nil
        }
        #expect(notifier.runningCount == NotifySendNotifier.maximumRunning)
        #expect(lines.count == 4)
        for line in lines {
            #expect(line.hasPrefix("--app-name=nearby -- Nearby message found [ns /t] --hint=string:x-evil:1  gpj.exe [2J"), "\(line)")
            #expect(!line.unicodeScalars.contains { $0.value == 0x202E || $0.value == 0x1B || $0.value == 0x2066 })
        }
        _ = FileManager.default.createFile(atPath: release.path, contents: nil)
        _ = try await eventually(within: 30, "the notify-send processes to end") { notifier.runningCount == 0 ? true : nil }
        notifier.notify(ServiceEvent(.lost, evil, subscription: "sub-1", serviceID: "svc"))
        _ = try await eventually(within: 20, "one more notify-send") { () -> Bool? in
            let text = (try? String(contentsOf: record, encoding: .utf8)) ?? ""
            return text.contains("Nearby message lost") ? true : nil
        }
    }
}
