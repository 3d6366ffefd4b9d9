import CDBus
import Dispatch
import Logging
import NearbyCore
import NearbyWire

/// The libdbus connection and everything attached to it, confined to the main loop's serial queue.
///
/// Every stored property below `loop` is read and written on `loop.queue` only; that is the invariant behind
/// `@unchecked Sendable`. The public face is `DBusClient`.
final class DBusConnectionCore: @unchecked Sendable {
    let loop: DBusMainLoop
    let logger: Logger
    var queue: DispatchQueue { loop.queue }

    var connection: OpaquePointer?
    var closed = false
    var subscribers: [UInt64: (matches: [DBusMatch], continuation: AsyncStream<DBusReceivedMessage>.Continuation)] = [:]
    var objects: [String: [String: DBusExportedInterface]] = [:]
    var pendingReplies: [ObjectIdentifier: PendingReply] = [:]
    var disconnectWaiters: [CheckedContinuation<Void, Never>] = []
    var nextID: UInt64 = 0
    /// The owners of the well-known names signals are accepted from (see `DBusNameOwners`).
    var owners = DBusNameOwners()
    /// Names whose owner is being looked up, with the callers waiting for that lookup.
    var ownerLookups: [String: [HandoffResumer<Void>]] = [:]

    static let threadsInitialized: Bool = dbus_threads_init_default() != 0

    init(logger: Logger) {
        self.logger = logger
        loop = DBusMainLoop(label: "nearby.dbus")
        loop.dispatch = { [weak self] in self?.dispatchAll() }
    }

    /// Opens the connection (on the queue; the connect(2) to a local socket does not wait on the peer).
    func open(address: String) throws {
        _ = Self.threadsInitialized
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_connection_open_private(address, &error) else {
            let message = error.message.map { String(cString: $0) } ?? "unknown error"
            throw NearbyError(.mediumUnavailable, "cannot connect to the D-Bus at \(address): \(message)")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        self.connection = connection
        loop.install(on: connection)
        dbus_connection_add_filter(connection, Self.filterFunction, Unmanaged.passUnretained(self).toOpaque(), nil)
    }

    private static let filterFunction: DBusHandleMessageFunction = { _, message, data in
        guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
        return Unmanaged<DBusConnectionCore>.fromOpaque(data).takeUnretainedValue().filter(message)
    }

    func dispatchAll() {
        while let connection, !closed, dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    // MARK: Incoming messages

    private func filter(_ message: OpaquePointer) -> DBusHandlerResult {
        let type = dbus_message_get_type(message)
        if type == Int32(DBUS_MESSAGE_TYPE_SIGNAL) {
            // libdbus makes this one itself (no sender); the bus refuses the Local interface from clients.
            if dbus_message_is_signal(message, "org.freedesktop.DBus.Local", "Disconnected") != 0,
                dbus_message_get_sender(message) == nil
            {
                logger.debug("D-Bus connection lost")
                queue.async { self.shutDown(reason: "the bus closed the connection") }
                return DBUS_HANDLER_RESULT_HANDLED
            }
            guard !subscribers.isEmpty || !ownerLookups.isEmpty || !owners.watchedNames.isEmpty else {
                return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
            }
            do {
                let decoded = try DBusReceivedMessage(message)
                // Owner changes first, so that the new owner's own signals that follow are believed.
                owners.observe(decoded)
                let owners = self.owners
                for subscriber in subscribers.values
                where subscriber.matches.contains(where: { $0.matches(decoded, owners: owners) }) {
                    subscriber.continuation.yield(decoded)
                }
            } catch {
                logger.debug("undecodable D-Bus signal dropped", metadata: ["error": "\(error)"])
            }
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
        if type == Int32(DBUS_MESSAGE_TYPE_METHOD_CALL), let rawPath = dbus_message_get_path(message),
            let interfaces = objects[String(cString: rawPath)]
        {
            handleCall(message, interfaces: interfaces)
            return DBUS_HANDLER_RESULT_HANDLED
        }
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }

    // MARK: Sending

    /// Builds a message; throws for names libdbus would refuse (it aborts on a failed check).
    static func methodCall(destination: String?, path: String, interface: String, member: String) throws -> OpaquePointer {
        if let destination, dbus_validate_bus_name(destination, nil) == 0 {
            throw NearbyError(.invalidArgument, "D-Bus: invalid bus name \"\(destination)\"")
        }
        try validate(path: path, interface: interface, member: member)
        guard let message = dbus_message_new_method_call(destination, path, interface, member) else {
            throw NearbyError(.unknown, "D-Bus: out of memory")
        }
        return message
    }

    static func validate(path: String, interface: String, member: String) throws {
        try DBusMarshalling.validateObjectPath(path)
        guard dbus_validate_interface(interface, nil) != 0 else {
            throw NearbyError(.invalidArgument, "D-Bus: invalid interface name \"\(interface)\"")
        }
        guard dbus_validate_member(member, nil) != 0 else {
            throw NearbyError(.invalidArgument, "D-Bus: invalid member name \"\(member)\"")
        }
    }

    func unavailable() -> NearbyError {
        NearbyError(.mediumUnavailable, "the D-Bus connection is closed")
    }

    /// Sends `message` (consumed) without waiting for a reply.
    func send(_ message: OpaquePointer) throws {
        defer { dbus_message_unref(message) }
        guard let connection, !closed else { throw unavailable() }
        guard dbus_connection_send(connection, message, nil) != 0 else { throw NearbyError(.unknown, "D-Bus: out of memory") }
    }

    /// Sends `message` (consumed) and completes `reply` with the answer.
    func send(_ message: OpaquePointer, timeoutMillis: Int32, reply: PendingReply) {
        defer { dbus_message_unref(message) }
        guard !reply.done else { return }
        guard let connection, !closed else { return reply.fail(unavailable()) }
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(connection, message, &pending, timeoutMillis) != 0, let pending else {
            return reply.fail(unavailable())
        }
        reply.pending = pending
        pendingReplies[ObjectIdentifier(reply)] = reply
        let call = UncheckedPendingCall(call: pending)
        let queue = self.queue
        reply.finished = { [weak self] in
            self?.pendingReplies[ObjectIdentifier(reply)] = nil
            // Not inside the notification that may be running now: unreferencing can free the call.
            queue.async { dbus_pending_call_unref(call.call) }
        }
        let data = Unmanaged.passRetained(reply).toOpaque()
        let installed = dbus_pending_call_set_notify(
            pending,
            { _, data in
                guard let data else { return }
                Unmanaged<PendingReply>.fromOpaque(data).takeUnretainedValue().complete()
            }, data,
            { data in
                guard let data else { return }
                Unmanaged<PendingReply>.fromOpaque(data).release()
            })
        if installed == 0 {
            Unmanaged<PendingReply>.fromOpaque(data).release()
            reply.cancel(with: NearbyError(.unknown, "D-Bus: out of memory"))
        } else if dbus_pending_call_get_completed(pending) != 0 {
            reply.complete()
        }
    }

    // MARK: Closing

    /// Closes the connection: subscribers finish, waiting calls fail, exported objects are dropped.
    func shutDown(reason: String) {
        guard !closed else { return }
        closed = true
        logger.debug("D-Bus connection closed", metadata: ["reason": "\(reason)"])
        for subscriber in subscribers.values { subscriber.continuation.finish() }
        subscribers.removeAll()
        objects.removeAll()
        for reply in Array(pendingReplies.values) { reply.cancel(with: unavailable()) }
        for waiter in ownerLookups.values.joined() { waiter.resume(throwing: unavailable()) }
        ownerLookups.removeAll()
        for waiter in disconnectWaiters { waiter.resume() }
        disconnectWaiters.removeAll()
        if let connection {
            // Unhook every callback first: pending calls keep the connection alive after this object is gone,
            // and libdbus must not call into it then.
            dbus_connection_remove_filter(connection, Self.filterFunction, Unmanaged.passUnretained(self).toOpaque())
            dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
            dbus_connection_set_wakeup_main_function(connection, nil, nil, nil)
            dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
            dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            self.connection = nil
        }
        loop.tearDown()
    }
}

/// A libdbus pending call handed to the queue (dereferenced there only).
struct UncheckedPendingCall: @unchecked Sendable {
    let call: OpaquePointer
}

/// One method call waiting for its reply; completed exactly once (reply, cancellation or closed connection).
/// Touched on the connection's queue only.
final class PendingReply: @unchecked Sendable {
    var continuation: HandoffResumer<[DBusValue]>?
    var pending: OpaquePointer?
    var done = false
    var finished: () -> Void = {}
    /// Called with the result on the queue, in the order libdbus dispatched it, before the caller resumes.
    var onResult: (@Sendable (Result<[DBusValue], any Error>) -> Void)?

    func complete() {
        guard !done, let pending else { return }
        guard let reply = dbus_pending_call_steal_reply(pending) else {
            return cancel(with: NearbyError(.mediumUnavailable, "D-Bus: no reply"))
        }
        defer { dbus_message_unref(reply) }
        do {
            let decoded = try DBusReceivedMessage(reply)
            if decoded.kind == .error {
                let remote = DBusRemoteError(
                    name: decoded.errorName ?? "org.freedesktop.DBus.Error.Failed",
                    message: decoded.arguments.first?.string ?? "")
                finish(.failure(remote.nearbyError))
            } else {
                finish(.success(decoded.arguments))
            }
        } catch {
            finish(.failure(error))
        }
    }

    func fail(_ error: any Error) {
        finish(.failure(error))
    }

    /// Cancels the call at libdbus (no notification follows) and fails it with `error`.
    func cancel(with error: any Error) {
        guard !done else { return }
        if let pending { dbus_pending_call_cancel(pending) }
        finish(.failure(error))
    }

    private func finish(_ result: Result<[DBusValue], any Error>) {
        guard !done else { return }
        done = true
        onResult?(result)
        onResult = nil
        continuation?.resume(with: result)
        continuation = nil
        finished()
        finished = {}
    }
}
