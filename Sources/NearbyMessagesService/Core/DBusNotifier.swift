import Foundation
import Logging
import NearbyBlueZ
import NearbyCore
import NearbyWire

/// Notifications through `org.freedesktop.Notifications` `Notify` on a session bus, over NearbyBlueZ's libdbus
/// client. Calls are made one at a time by one task, so ``notify(_:)`` never waits; at most 64 wait (the newest are
/// kept). A call that fails is logged once and the notification goes to the fallback (`notify-send`) when there is
/// one.
final class DBusNotifier: ServiceNotifier {
    static let name = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    private let queue: AsyncStream<ServiceEvent>.Continuation
    private let worker: Task<Void, Never>

    private init(queue: AsyncStream<ServiceEvent>.Continuation, worker: Task<Void, Never>) {
        self.queue = queue
        self.worker = worker
    }

    deinit {
        queue.finish()
    }

    /// Connects to the bus at `address` and checks that a notification server is there (running, or activatable).
    /// - Throws: `NearbyError` `.mediumUnavailable` when the bus or the server is missing.
    static func connect(address: String, fallback: NotifySendNotifier?, logger: Logger) async throws -> DBusNotifier {
        let bus = try await DBusClient.connect(address: address, logger: logger)
        do {
            var present = try await bus.nameHasOwner(name)
            if !present {
                let activatable = try await bus.call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                    member: "ListActivatableNames", timeout: .seconds(5))
                present = activatable.first?.strings?.contains(name) ?? false
            }
            guard present else { throw NearbyError(.mediumUnavailable, "no \(name) on the session bus \(address)") }
        } catch {
            await bus.close()
            throw error
        }
        let (events, queue) = AsyncStream<ServiceEvent>.makeStream(bufferingPolicy: .bufferingNewest(64))
        // Owner: this notifier (`worker`, never awaited); its `deinit` finishes `queue`, and the task ends once the
        // queued notifications were sent (each call times out after 5 s), then closes the bus.
        let worker = Task {
            var warned = false
            for await event in events {
                let (summary, body) = DesktopNotifier.texts(for: event)
                do {
                    _ = try await bus.call(
                        destination: name, path: path, interface: name, member: "Notify",
                        arguments: [
                            .string("nearby"), .uint32(0), .string(""), .string(summary), .string(body), .strings([]),
                            .properties([:]), .int32(-1),
                        ],
                        timeout: .seconds(5))
                } catch {
                    if !warned {
                        logger.warning(
                            "desktop notification over D-Bus failed\(fallback == nil ? "" : "; using notify-send")",
                            metadata: ["error": "\(error)"])
                        warned = true
                    }
                    fallback?.notify(event)
                }
            }
            await bus.close()
        }
        return DBusNotifier(queue: queue, worker: worker)
    }

    func notify(_ event: ServiceEvent) {
        queue.yield(event)
    }
}
