import Foundation
import NearbyBlueZ
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

/// A private `dbus-daemon --session` in a temporary directory, stopped by its PID.
final class PrivateSessionBus: Sendable {
    let directory: URL
    let process: SpawnedProcess
    /// The address it printed.
    let address: String

    init() async throws {
        directory = URL(fileURLWithPath: "/tmp/nsvc-bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let output = directory.appendingPathComponent("address")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        process = try SpawnedProcess(
            "/usr/bin/dbus-daemon",
            ["--session", "--nofork", "--nopidfile", "--print-address", "--address=unix:dir=\(directory.path)"],
            outputPath: output.path)
        address = try await eventually(within: 20, "the private dbus-daemon to print its address") {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").first { $0.hasPrefix("unix:") }.map(String.init)
        }
    }

    func stop() {
        process.stopBlocking(signal: SIGKILL)
        try? FileManager.default.removeItem(at: directory)
    }
}

/// A fake notification server: `org.freedesktop.Notifications` on a bus, recording `Notify` calls.
final class FakeNotificationServer: Sendable {
    /// Each call's app name, summary and body.
    let calls = LockedValue<[(app: String, summary: String, body: String)]>([])
    let connection: DBusClient

    init(on bus: PrivateSessionBus) async throws {
        connection = try await DBusClient.connect(address: bus.address)
        let calls = self.calls
        try await connection.export(path: "/org/freedesktop/Notifications", interfaces: [
            DBusExportedInterface(
                name: "org.freedesktop.Notifications",
                methods: [
                    "Notify": { call in
                        let strings = call.arguments.map { $0.string ?? "" }
                        let id = calls.withLock { calls in
                            calls.append((strings[0], strings[3], strings[4]))
                            return UInt32(calls.count)
                        }
                        return [.uint32(id)]
                    },
                    "GetCapabilities": { _ in [.strings(["body"])] },
                ])
        ])
        #expect(try await connection.requestName("org.freedesktop.Notifications") == 1)
    }
}

/// Desktop notifications: D-Bus first, notify-send as the fallback, nothing when neither is there.
@Suite("Desktop notifier", .timeLimit(.minutes(5)))
struct DesktopNotifierTests {
    @Test("Notify over a private session bus: found gives one notification with the message summary; the fallbacks", .timeLimit(.minutes(1)))
    func dbusNotifications() async throws {
        let bus = try await PrivateSessionBus()
        defer { bus.stop() }
        let fakeBin = try temporaryDirectory("notify-bin")
        let script = fakeBin.appendingPathComponent("notify-send")
        try "#!/bin/sh\nexit 0\n".write(to: script, atomically: true, encoding: .utf8)
        chmod(script.path, 0o755)

        // No server on the bus yet: notify-send when it is on PATH, else nothing.
        let noServer = await DesktopNotifier.make(environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address, "PATH": fakeBin.path])
        #expect(noServer?.backend == .notifySend(script))
        #expect(await DesktopNotifier.make(environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address, "PATH": "/nonexistent"]) == nil)
        #expect(await DesktopNotifier.make(environment: ["XDG_RUNTIME_DIR": "/nonexistent", "PATH": "/nonexistent"]) == nil)

        let server = try await FakeNotificationServer(on: bus)
        let notifier = try #require(
            await DesktopNotifier.make(environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address, "PATH": fakeBin.path]))
        #expect(notifier.backend == .dbus(address: bus.address))

        let service = try inMemoryService(InMemoryMedium.Air(), stateFile: nil, notifier: notifier)
        let publisher = await service.connect { _ in }
        let subscriberEvents = EventRecorder()
        let subscriber = await service.connect(subscriberEvents.sink)
        let published = await service.handle(
            ServiceRequest(id: 1, op: .publish, serviceID: "svc", contentHex: Hex.encode(Array("hello bus".utf8)), namespace: "ns"),
            from: publisher)
        _ = await service.handle(ServiceRequest(id: 2, op: .subscribe, serviceID: "svc"), from: subscriber)
        _ = try await subscriberEvents.waitFor("found") { $0.kind == .found }
        let first = try await eventually(within: 20, "a Notify call") { server.calls.withLock { $0.first } }
        #expect(first.app == "nearby" && first.summary == "Nearby message found" && first.body == "[ns] hello bus")

        // Lost is the second notification: found made exactly one.
        _ = await service.handle(ServiceRequest(id: 3, op: .unpublish, handle: published.handle), from: publisher)
        let calls = try await eventually(within: 20, "the lost notification") {
            server.calls.withLock { $0.count >= 2 ? $0.map(\.summary) : nil }
        }
        #expect(calls == ["Nearby message found", "Nearby message lost"])
        await service.shutdown()
        await server.connection.close()
    }
}
