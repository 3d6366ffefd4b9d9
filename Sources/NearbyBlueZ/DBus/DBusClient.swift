import CDBus
import Dispatch
import Foundation
import Logging
import NearbyCore
import NearbyWire

/// A connection to a D-Bus message bus through the system's libdbus-1: method calls awaited asynchronously,
/// signals as `AsyncStream`s, and exported objects.
///
/// libdbus runs on one serial dispatch queue per connection (its watches and timeouts are dispatch sources, see
/// `DBusMainLoop`); no call blocks a thread of the cooperative pool while it waits. When the bus goes away, signal
/// streams finish, waiting calls fail with `.mediumUnavailable` and `waitForDisconnect()` returns.
package final class DBusClient: Sendable {
    let core: DBusConnectionCore
    /// The unique name the bus assigned (`:1.42`).
    package let uniqueName: String

    /// The default system bus address (`DBUS_SYSTEM_BUS_ADDRESS` overrides it).
    package static var systemBusAddress: String {
        ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/var/run/dbus/system_bus_socket"
    }

    private init(core: DBusConnectionCore, uniqueName: String) {
        self.core = core
        self.uniqueName = uniqueName
    }

    deinit {
        let core = self.core
        core.queue.async { core.shutDown(reason: "closed by its owner") }
    }

    /// Connects to the system bus, waiting at most `timeout` for it to answer `Hello`.
    /// - Throws: `.mediumUnavailable` when the bus cannot be reached, `.timeout` when it does not answer.
    package static func system(
        logger: Logger = Logger(label: "nearby.dbus"), timeout: Duration = .seconds(25)
    ) async throws -> DBusClient {
        try await connect(address: systemBusAddress, logger: logger, timeout: timeout)
    }

    /// Connects to the bus at `address` (a D-Bus address such as `unix:path=/run/dbus/system_bus_socket`) and
    /// registers with it (`Hello`, answered within `timeout`).
    /// - Throws: `.mediumUnavailable` when it cannot be reached, `.timeout` when it does not answer.
    package static func connect(
        address: String, logger: Logger = Logger(label: "nearby.dbus"), timeout: Duration = .seconds(25)
    ) async throws -> DBusClient {
        let core = DBusConnectionCore(logger: logger)
        try await core.onQueue { try core.open(address: address) }
        do {
            let reply = try await core.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "Hello", arguments: [], timeout: timeout)
            guard let name = reply.first?.string else {
                throw NearbyError(.malformedMessage, "D-Bus Hello returned no unique name")
            }
            await core.onQueue { if let connection = core.connection { dbus_bus_set_unique_name(connection, name) } }
            return DBusClient(core: core, uniqueName: name)
        } catch {
            await core.onQueue { core.shutDown(reason: "Hello failed") }
            throw error
        }
    }

    /// Whether the connection is still open.
    package var isConnected: Bool {
        get async { await self.core.onQueue { [core = self.core] in !core.closed } }
    }

    /// Closes the connection (idempotent).
    package func close() async {
        await self.core.onQueue { [core = self.core] in core.shutDown(reason: "closed by its owner") }
    }

    /// Returns once the connection has closed (the bus went away, or `close()`).
    package func waitForDisconnect() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            core.queue.async {
                if self.core.closed { waiter.resume() } else { self.core.disconnectWaiters.append(waiter) }
            }
        }
    }

    /// Calls a method and returns the reply's arguments.
    /// - Throws: a `NearbyError` whose `cause` is the `DBusRemoteError` for an error reply (see
    ///   `DBusRemoteError.nearbyError` for the codes); `.invalidArgument` for invalid names or values;
    ///   `CancellationError` when the task is cancelled.
    package func call(
        destination: String, path: String, interface: String, member: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25)
    ) async throws -> [DBusValue] {
        try await core.call(
            destination: destination, path: path, interface: interface, member: member, arguments: arguments,
            timeout: timeout)
    }

    /// Emits a signal from `path`: broadcast, or unicast to the connection `destination` (which the bus delivers
    /// whatever that connection's match rules say).
    package func emitSignal(
        path: String, interface: String, member: String, arguments: [DBusValue] = [], destination: String? = nil
    ) async throws {
        try DBusConnectionCore.validate(path: path, interface: interface, member: member)
        if let destination, dbus_validate_bus_name(destination, nil) == 0 {
            throw NearbyError(.invalidArgument, "D-Bus: invalid bus name \"\(destination)\"")
        }
        for value in arguments { try DBusMarshalling.validate(value) }
        try await self.core.onQueue { [core = self.core] in
            guard let message = dbus_message_new_signal(path, interface, member) else {
                throw NearbyError(.unknown, "D-Bus: out of memory")
            }
            if let destination, dbus_message_set_destination(message, destination) == 0 {
                dbus_message_unref(message)
                throw NearbyError(.unknown, "D-Bus: out of memory")
            }
            do {
                try DBusMarshalling.append(arguments, to: message)
            } catch {
                dbus_message_unref(message)
                throw error
            }
            try core.send(message)
        }
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for an exported object.
    package func emitPropertiesChanged(
        path: String, interface: String, changed: [String: DBusValue], invalidated: [String] = []
    ) async throws {
        try await emitSignal(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            arguments: [.string(interface), .properties(changed), .strings(invalidated)])
    }

    /// Subscribes to signals: the rule is added on the bus (AddMatch) before this returns, so nothing sent after
    /// the return is missed. Ending the stream's iteration removes the rule again.
    ///
    /// Only signals whose sender passes the rule are delivered: a well-known sender such as `org.bluez` means the
    /// unique name that owns it at the time (looked up, then followed through the bus daemon's
    /// `NameOwnerChanged`), and `org.freedesktop.DBus` the bus daemon itself. Other clients' signals, unicast to
    /// this connection or not, are dropped (see `DBusNameOwners`).
    /// - Throws: `.timeout` when the bus does not answer within `timeout`; `.mediumUnavailable` when it refuses or
    ///   the connection is closed.
    package func signals(matching match: DBusMatch, timeout: Duration = .seconds(25)) async throws
        -> AsyncStream<DBusReceivedMessage>
    {
        try await signals(matching: [match], timeout: timeout)
    }

    /// Subscribes to the signals of several rules in one stream, in the order the bus delivered them.
    package func signals(matching matches: [DBusMatch], timeout: Duration = .seconds(25)) async throws
        -> AsyncStream<DBusReceivedMessage>
    {
        for name in Set(matches.compactMap(\.wellKnownSender)).sorted() {
            try await core.followOwner(of: name, timeout: timeout)
        }
        let (stream, continuation) = AsyncStream.makeStream(
            of: DBusReceivedMessage.self, bufferingPolicy: .bufferingNewest(4096))
        let core = self.core
        let id: UInt64 = try await self.core.onQueue { [core = self.core] in
            guard !core.closed else { throw core.unavailable() }
            core.nextID += 1
            core.subscribers[core.nextID] = (matches, continuation)
            return core.nextID
        }
        continuation.onTermination = { _ in
            core.queue.async {
                guard core.subscribers.removeValue(forKey: id) != nil, !core.closed else { return }
                // Owner: none; one-shot clean-up after the subscriber left, ending when its RemoveMatch calls are
                // answered or time out (5 s each) or fail because the connection closed.
                Task {
                    for match in matches {
                        _ = try? await core.call(
                            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                            interface: "org.freedesktop.DBus", member: "RemoveMatch",
                            arguments: [.string(match.ruleString)], timeout: .seconds(5))
                    }
                }
            }
        }
        do {
            for match in matches {
                _ = try await call(
                    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                    interface: "org.freedesktop.DBus", member: "AddMatch", arguments: [.string(match.ruleString)],
                    timeout: timeout)
            }
        } catch {
            continuation.finish()
            throw error
        }
        return stream
    }

    /// Exports an object at `path` with the given interfaces (replacing what was there).
    /// - Throws: `.invalidArgument` for an invalid path or interface name.
    package func export(path: String, interfaces: [DBusExportedInterface]) async throws {
        try DBusMarshalling.validateObjectPath(path)
        for interface in interfaces where dbus_validate_interface(interface.name, nil) == 0 {
            throw NearbyError(.invalidArgument, "D-Bus: invalid interface name \"\(interface.name)\"")
        }
        let table = Dictionary(interfaces.map { ($0.name, $0) }, uniquingKeysWith: { $1 })
        try await self.core.onQueue { [core = self.core] in
            guard !core.closed else { throw core.unavailable() }
            core.objects[path] = table
        }
    }

    /// Stops exporting the object at `path`.
    package func unexport(path: String) async {
        await self.core.onQueue { [core = self.core] in _ = core.objects.removeValue(forKey: path) }
    }

    /// Whether `name` currently has an owner on the bus (e.g. whether `bluetoothd` holds `org.bluez`).
    package func nameHasOwner(_ name: String) async throws -> Bool {
        let reply = try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "NameHasOwner", arguments: [.string(name)])
        return reply.first?.bool ?? false
    }

    /// Asks the bus for a well-known name (tests export services under one); returns the RequestName reply code
    /// (1: primary owner).
    package func requestName(_ name: String) async throws -> UInt32 {
        let reply = try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "RequestName", arguments: [.string(name), .uint32(4)])
        return reply.first?.uint32 ?? 0
    }
}

extension DBusConnectionCore {
    /// Runs `body` on the queue and returns its result.
    func onQueue<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withHandoffContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Runs `body` on the queue and returns its result.
    func onQueue<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        do {
            return try await withHandoffContinuation { continuation in
                queue.async { continuation.resume(returning: body()) }
            }
        } catch {
            preconditionFailure("the resumer is only ever given a value: \(error)")
        }
    }

    /// A method call whose reply is awaited without blocking a thread.
    /// `onResult` sees the result on the queue, in dispatch order, before the caller resumes.
    func call(
        destination: String, path: String, interface: String, member: String, arguments: [DBusValue],
        timeout: Duration, onResult: (@Sendable (Result<[DBusValue], any Error>) -> Void)? = nil
    ) async throws -> [DBusValue] {
        for value in arguments { try DBusMarshalling.validate(value) }
        let message = try Self.methodCall(destination: destination, path: path, interface: interface, member: member)
        do {
            try DBusMarshalling.append(arguments, to: message)
        } catch {
            dbus_message_unref(message)
            throw error
        }
        let millis = Int32(clamping: max(1, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000))
        let reply = PendingReply()
        reply.onResult = onResult
        let retained = UncheckedMessage(message: message)
        return try await withTaskCancellationHandler {
            try await withHandoffContinuation { continuation in
                queue.async {
                    guard !reply.done else {
                        // Cancelled before it was sent.
                        dbus_message_unref(retained.message)
                        return continuation.resume(throwing: CancellationError())
                    }
                    reply.continuation = continuation
                    self.send(retained.message, timeoutMillis: millis, reply: reply)
                }
            }
        } onCancel: {
            queue.async { reply.cancel(with: CancellationError()) }
        }
    }
}

/// A libdbus message handed to the queue (dereferenced there only).
struct UncheckedMessage: @unchecked Sendable {
    let message: OpaquePointer
}
