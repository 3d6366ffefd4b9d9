import Foundation
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBlueZ

/// A service object exported by one connection on a private bus, called and signalled by another.
@Suite(.timeLimit(.minutes(5))) struct DBusClientTests {
    static let path = "/com/example/Service"
    static let interface = "com.example.Service"

    /// Exports the test object: Echo returns its arguments, Fail throws a D-Bus error, Hang never answers
    /// until the gate finishes, and the property Answer is 42.
    private func exportService(on service: DBusClient, gate: AsyncStream<Void> = AsyncStream { $0.finish() }) async throws {
        try await service.export(path: Self.path, interfaces: [
            DBusExportedInterface(
                name: Self.interface,
                properties: { ["Answer": .uint16(42), "Name": .string("test")] },
                methods: [
                    "Echo": { call in call.arguments },
                    "Fail": { _ in throw DBusRemoteError(name: "com.example.Error.Nope", message: "refused") },
                    "Hang": { _ in
                        for await _ in gate {}
                        return []
                    },
                ])
        ])
    }

    @Test func methodCallsPropertiesAndErrors() async throws {
        try await withPrivateBus { bus in
            let service = try await bus.connect()
            let client = try await bus.connect()
            try await exportService(on: service)
            let arguments: [DBusValue] = [
                .string("x"), .bytes([0xFE, 0xF3]), .properties(["RSSI": .int16(-50), "Connected": .boolean(false)]),
                .uint16(7), .objectPath("/org/bluez/hci0"),
            ]
            let echoed = try await client.call(
                destination: service.uniqueName, path: Self.path, interface: Self.interface, member: "Echo",
                arguments: arguments)
            #expect(echoed == arguments)

            let all = try await client.call(
                destination: service.uniqueName, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                member: "GetAll", arguments: [.string(Self.interface)])
            #expect(all.first?.propertyMap == ["Answer": .uint16(42), "Name": .string("test")])
            let one = try await client.call(
                destination: service.uniqueName, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                member: "Get", arguments: [.string(Self.interface), .string("Answer")])
            #expect(one.first?.uint16 == 42)

            let failure = try await #require(throws: NearbyError.self) {
                try await client.call(
                    destination: service.uniqueName, path: Self.path, interface: Self.interface, member: "Fail")
            }
            #expect(failure.dbusErrorName == "com.example.Error.Nope")
            let unknown = try await #require(throws: NearbyError.self) {
                try await client.call(
                    destination: service.uniqueName, path: Self.path, interface: Self.interface, member: "Nothing")
            }
            #expect(unknown.dbusErrorName == "org.freedesktop.DBus.Error.UnknownMethod")
            let noObject = try await #require(throws: NearbyError.self) {
                try await client.call(
                    destination: service.uniqueName, path: "/elsewhere", interface: Self.interface, member: "Echo")
            }
            #expect(noObject.code == .mediumUnavailable)
            await service.close()
            await client.close()
        }
    }

    @Test func callTimesOutAndCancels() async throws {
        try await withPrivateBus { bus in
            let service = try await bus.connect()
            let client = try await bus.connect()
            let (gate, open) = AsyncStream.makeStream(of: Void.self)
            try await exportService(on: service, gate: gate)
            let timedOut = try await #require(throws: NearbyError.self) {
                try await client.call(
                    destination: service.uniqueName, path: Self.path, interface: Self.interface, member: "Hang",
                    timeout: .milliseconds(300))
            }
            #expect(timedOut.code == .timeout)

            let task = Task {
                try await client.call(
                    destination: service.uniqueName, path: Self.path, interface: Self.interface, member: "Hang")
            }
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
            // The connection still works after both.
            let echoed = try await client.call(
                destination: service.uniqueName, path: Self.path, interface: Self.interface, member: "Echo",
                arguments: [.string("still here")])
            #expect(echoed == [.string("still here")])
            open.finish()
            await service.close()
            await client.close()
        }
    }

    @Test func signalsArriveAsStreams() async throws {
        try await withPrivateBus { bus in
            let service = try await bus.connect()
            let client = try await bus.connect()
            let pings = try await client.signals(matching: DBusMatch(interface: Self.interface, member: "Ping"))
            let changes = try await client.signals(matching: .propertiesChanged(
                sender: service.uniqueName, pathNamespace: "/com/example", interface: Self.interface))
            try await service.emitSignal(path: Self.path, interface: Self.interface, member: "Other", arguments: [.uint32(0)])
            try await service.emitSignal(path: Self.path, interface: Self.interface, member: "Ping", arguments: [.uint32(1)])
            try await service.emitPropertiesChanged(path: "/com/example/Service/child", interface: "com.example.Unrelated", changed: ["X": .boolean(true)])
            try await service.emitPropertiesChanged(path: Self.path, interface: Self.interface, changed: ["Answer": .uint16(43)])
            let ping = try await withTestTimeout(10, "the Ping signal") {
                var iterator = pings.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(ping?.arguments == [.uint32(1)])
            #expect(ping?.sender == service.uniqueName)
            let change = try await withTestTimeout(10, "PropertiesChanged") {
                var iterator = changes.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(change?.arguments.first?.string == Self.interface)
            #expect(change?.arguments.dropFirst().first?.propertyMap == ["Answer": .uint16(43)])
            await service.close()
            await client.close()
        }
    }

    @Test func nameOwnerChangesAndDisconnect() async throws {
        let bus = try await PrivateBus()
        defer { bus.stop() }
        let client = try await bus.connect()
        let owners = try await client.signals(matching: .nameOwnerChanged("com.example.Daemon"))
        let daemon = try await bus.connect()
        #expect(try await daemon.requestName("com.example.Daemon") == 1)
        #expect(try await client.nameHasOwner("com.example.Daemon"))
        await daemon.close()
        let newOwners = try await withTestTimeout(10, "NameOwnerChanged twice") {
            var seen: [String] = []
            for await signal in owners {
                seen.append(signal.arguments.count > 2 ? signal.arguments[2].string ?? "?" : "?")
                if seen.count == 2 { break }
            }
            return seen
        }
        #expect(newOwners == [daemon.uniqueName, ""])
        #expect(try await client.nameHasOwner("com.example.Daemon") == false)

        // The bus goes away: the stream finishes, waiting for the disconnect returns, calls fail cleanly.
        let stream = try await client.signals(matching: DBusMatch(interface: Self.interface))
        bus.stop()
        try await withTestTimeout(10, "the disconnect") { await client.waitForDisconnect() }
        try await withTestTimeout(10, "the stream to finish") { for await _ in stream {} }
        let error = try await #require(throws: NearbyError.self) { try await client.nameHasOwner("x.y") }
        #expect(error.code == .mediumUnavailable)
    }

    /// Many calls in flight at once, from several tasks, with signals interleaved: every reply arrives. With both
    /// of libdbus's watches on one descriptor, toggling the write source sometimes lost the read interest and a
    /// reply never came (a 25 s NoReply).
    @Test func manyConcurrentCallsAllGetTheirReplies() async throws {
        try await withPrivateBus { bus in
            let service = try await bus.connect()
            let client = try await bus.connect()
            try await exportService(on: service)
            let destination = service.uniqueName
            try await withTestTimeout(60, "400 calls") {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for worker in 0..<4 {
                        group.addTask {
                            for index in 0..<100 {
                                let argument = DBusValue.bytes(Array(repeating: UInt8(index), count: 64 * (worker + 1)))
                                let reply = try await client.call(
                                    destination: destination, path: Self.path, interface: Self.interface,
                                    member: "Echo", arguments: [argument], timeout: .seconds(20))
                                #expect(reply == [argument])
                                try await service.emitSignal(path: Self.path, interface: Self.interface, member: "Tick")
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            await service.close()
            await client.close()
        }
    }

    /// A client dropped without `close()` (as the probe does at exit) shuts down without libdbus calling back
    /// into freed objects; this crashed ("unowned reference ... already destroyed") before the callbacks were
    /// unhooked on shutdown.
    @Test func droppedClientsShutDownCleanly() async throws {
        try await withPrivateBus { bus in
            for _ in 0..<20 {
                var client: DBusClient? = try await bus.connect()
                let stream = try await client?.signals(matching: DBusMatch(interface: Self.interface))
                _ = try await client?.nameHasOwner("com.example.Nobody")
                client = nil
                _ = stream
            }
            let survivor = try await bus.connect()
            #expect(try await survivor.nameHasOwner(survivor.uniqueName))
            await survivor.close()
        }
    }

    @Test func unreachableBusIsMediumUnavailable() async throws {
        let error = try await #require(throws: NearbyError.self) {
            try await DBusClient.connect(address: "unix:path=/nonexistent/nearby-test-bus")
        }
        #expect(error.code == .mediumUnavailable)
    }
}
