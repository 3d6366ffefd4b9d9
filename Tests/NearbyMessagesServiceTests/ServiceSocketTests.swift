import Foundation
import NearbyCore
import NearbyMessages
import NearbyMessagesService
import NearbyTesting
import NearbyTestSupport
import NearbyWire
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The Unix-socket server and client, in process, on an in-memory medium.
@Suite("Message service socket", .timeLimit(.minutes(5)))
struct ServiceSocketTests {
    static func start(_ tag: String) async throws -> (MessageService, MessageServiceServer, Task<Void, Never>) {
        // Unix socket paths are short (108 bytes): keep the directory short.
        let socket = URL(fileURLWithPath: "/tmp/nsvc-\(UUID().uuidString.prefix(8))/s.sock")
        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil)
        let server = try await MessageServiceServer.bind(socketPath: socket, service: service)
        return (service, server, Task { await server.run() })
    }

    @Test("two clients over the socket: one publishes, the other subscribes and reads found as an event line", .timeLimit(.minutes(1)))
    func publishAndSubscribe() async throws {
        let (service, server, serving) = try await Self.start("pubsub")
        let publisher = try await MessageServiceClient.connect(socketPath: server.socketPath)
        let subscriber = try await MessageServiceClient.connect(socketPath: server.socketPath)
        #expect(try await publisher.send(ServiceRequest(id: 0, op: .ping)).ok)
        let published = try await publisher.send(
            ServiceRequest(id: 0, op: .publish, serviceID: "svc", contentHex: Hex.encode(Array("hi".utf8))))
        #expect(published.ok, "\(published)")
        let subscribed = try await subscriber.send(ServiceRequest(id: 0, op: .subscribe, serviceID: "svc"))
        #expect(subscribed.ok)
        var events = subscriber.events.makeAsyncIterator()
        let found = try #require(await events.next())
        #expect(found.kind == .found && found.message == "hi" && found.subscription == subscribed.handle)
        let listed = try await subscriber.send(ServiceRequest(id: 0, op: .list))
        #expect(listed.entries?.map(\.kind) == [.publication, .subscription])

        await publisher.close()  // its publication ends with it
        let lost = try #require(await events.next())
        #expect(lost.kind == .lost && lost.message == "hi")
        await subscriber.close()
        await server.close()
        await serving.value
        await service.shutdown()
        #expect(!FileManager.default.fileExists(atPath: server.socketPath.path))
    }

    @Test("a line that is not a request gets an error response with its id; the connection and others go on", .timeLimit(.minutes(1)))
    func badLines() async throws {
        let (service, server, serving) = try await Self.start("bad")
        let raw = try RawSocket(path: server.socketPath.path)
        try raw.send("this is not json\n{\"id\":9,\"op\":\"explode\"}\n{\"id\":10,\"op\":\"ping\"}\n")
        let first = try ServiceCodec.decode(ServiceResponse.self, from: Data(try raw.line().utf8))
        #expect(!first.ok && first.id == nil && first.error?.code == "malformedMessage")
        let second = try ServiceCodec.decode(ServiceResponse.self, from: Data(try raw.line().utf8))
        #expect(!second.ok && second.id == 9 && second.error?.message.contains("\"op\"") == true, "\(second)")
        let third = try ServiceCodec.decode(ServiceResponse.self, from: Data(try raw.line().utf8))
        #expect(third.ok && third.id == 10)

        // A line over the limit drops that connection only.
        try raw.send(String(repeating: "x", count: ServiceCodec.maximumLineLength + 10))
        #expect(try raw.readLine(allowEOF: true) == nil)
        let other = try await MessageServiceClient.connect(socketPath: server.socketPath)
        #expect(try await other.send(ServiceRequest(id: 0, op: .ping)).ok)
        await other.close()
        await server.close()
        await serving.value
        await service.shutdown()
    }

    @Test("a second server on a live socket is refused; a stale socket file is replaced; no server: a clear error", .timeLimit(.minutes(1)))
    func socketFile() async throws {
        let (service, server, serving) = try await Self.start("twice")
        await #expect(throws: NearbyError.self) {
            _ = try await MessageServiceServer.bind(socketPath: server.socketPath, service: service)
        }
        await server.close()
        await serving.value
        // Leave a stale socket file behind (bound, never listened on by anyone alive).
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        _ = withUnsafeMutableBytes(of: &address.sun_path) { strcpy($0.baseAddress!.assumingMemoryBound(to: CChar.self), server.socketPath.path) }
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        close(fd)
        #expect(FileManager.default.fileExists(atPath: server.socketPath.path))
        do {
            let error = await #expect(throws: NearbyError.self) { _ = try await MessageServiceClient.connect(socketPath: server.socketPath) }
            #expect(error?.code == .mediumUnavailable)
        }
        let again = try await MessageServiceServer.bind(socketPath: server.socketPath, service: service)
        let servingAgain = Task { await again.run() }
        let client = try await MessageServiceClient.connect(socketPath: again.socketPath)
        #expect(try await client.send(ServiceRequest(id: 0, op: .ping)).ok)
        await client.close()
        await again.close()
        await servingAgain.value
    }
}

/// A blocking Unix-socket connection for sending raw bytes (reads time out after 10 s).
struct RawSocket {
    let fd: Int32
    private let buffer = LockedValue<[UInt8]>([])

    init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        _ = withUnsafeMutableBytes(of: &address.sun_path) { strcpy($0.baseAddress!.assumingMemoryBound(to: CChar.self), path) }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { throw NearbyError(.endpointIoError, "connect failed: errno \(errno)") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }  // the server may close mid-way (over-long line)
            offset += sent
        }
    }

    /// The next line; the end of the stream is an error.
    func line() throws -> String {
        guard let line = try readLine() else { throw NearbyError(.endpointIoError, "the server closed the connection") }
        return line
    }

    /// The next line, or `nil` at the end of the stream when `allowEOF`.
    func readLine(allowEOF: Bool = false) throws -> String? {
        while true {
            if let line = buffer.withLock({ buffer -> String? in
                guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                defer { buffer.removeSubrange(...newline) }
                return String(decoding: buffer[..<newline], as: UTF8.self)
            }) { return line }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &chunk, chunk.count, 0)
            if count == 0 || (count < 0 && errno == ECONNRESET) {
                if allowEOF { return nil }
                throw NearbyError(.endpointIoError, "the server closed the connection")
            }
            guard count > 0 else { throw NearbyError(.timeout, "no line within 10 s (errno \(errno))") }
            buffer.withLock { $0.append(contentsOf: chunk[..<count]) }
        }
    }
}

@Suite("notify-send notifier", .timeLimit(.minutes(5)))
struct NotifySendNotifierTests {
    @Test("notify-send from PATH gets the app name, a summary and the escaped message", .timeLimit(.minutes(1)))
    func fakeNotifySend() async throws {
        let directory = try temporaryDirectory("notify")
        let record = directory.appendingPathComponent("calls")
        let script = directory.appendingPathComponent("notify-send")
        try "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '\(record.path)'\n".write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)
        #expect(NotifySendNotifier(path: "/nonexistent-\(UUID().uuidString)") == nil)
        let notifier = try #require(NotifySendNotifier(path: "/nonexistent:\(directory.path)"))
        #expect(notifier.executable.path == script.path)
        notifier.notify(ServiceEvent(.found, Message(text: "<b>hi</b> & bye", namespace: "ns", type: "t"), subscription: "sub-1", serviceID: "svc"))
        let lines = try await eventually(within: 20, "notify-send to run") { () -> [String]? in
            let text = (try? String(contentsOf: record, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").map(String.init)
            return lines.count >= 3 ? lines : nil
        }
        #expect(lines == ["--app-name=nearby", "Nearby message found", "[ns/t] &lt;b&gt;hi&lt;/b&gt; &amp; bye"])
    }
}
