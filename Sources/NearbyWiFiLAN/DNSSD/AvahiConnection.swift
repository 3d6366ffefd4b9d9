import CAvahiClient
import NearbyWire

/// One connection to avahi-daemon: an Avahi threaded poll (its own event-loop thread) and an `AvahiClient`, plus
/// the registrations and browse sessions that live on that client.
///
/// Locking: every mutable property here, and in ``AvahiRegistration``, ``AvahiBrowseSession`` and
/// ``AvahiServiceCopy``, is touched only with the threaded poll's lock held — either inside an Avahi callback (the
/// poll thread holds the lock while it dispatches) or inside ``withLock(_:)`` on any other thread. The lock is not
/// recursive and must never be taken on the poll thread, so callbacks never call ``withLock(_:)``.
///
/// Lifetime: C callbacks get unretained pointers to these objects. That is safe because an object's Avahi handle
/// (entry group, browser, resolver, timeout) is always freed, with the lock held, before the object is dropped, and
/// no callback can run for a freed handle. No object that a callback reaches holds the connection strongly, so the
/// connection is never deinitialized on the poll thread.
final class AvahiConnection: @unchecked Sendable {
    private let poll: OpaquePointer
    /// The poll's API table, for timeouts.
    let pollAPI: UnsafePointer<AvahiPoll>
    /// The current client, or `nil` before the first connection.
    private(set) var client: OpaquePointer?
    /// Whether `client` reached `AVAHI_CLIENT_FAILURE`; a failed client is replaced on the next request.
    private var clientFailed = false
    private var registrations: [ObjectIdentifier: AvahiRegistration] = [:]
    private var browseSessions: [ObjectIdentifier: AvahiBrowseSession] = [:]

    /// Starts the event loop and connects to the daemon.
    ///
    /// - Throws: `.mediumUnavailable` when avahi-daemon cannot be reached over the D-Bus system bus.
    init() throws {
        guard let poll = avahi_threaded_poll_new() else {
            throw NearbyError(.unknown, "could not create the Avahi event loop")
        }
        self.poll = poll
        self.pollAPI = avahi_threaded_poll_get(poll)
        guard avahi_threaded_poll_start(poll) >= 0 else {
            throw NearbyError(.unknown, "could not start the Avahi event-loop thread")
        }
        try withLock { _ = try connectedClient() }
    }

    deinit {
        // Never runs on the poll thread (see the type's comment), so stopping joins the thread safely; afterwards
        // no callback can run and the handles can be freed without the lock.
        avahi_threaded_poll_stop(poll)
        for registration in registrations.values {
            registration.freeGroup()
        }
        for session in browseSessions.values {
            session.freeAvahiObjects()
        }
        if let client {
            avahi_client_free(client)
        }
        avahi_threaded_poll_free(poll)
    }

    /// Runs `body` with the event-loop lock held. Never call this from an Avahi callback.
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return try body()
    }

    /// The running client, connecting (again) if there is none or the last one failed. Lock held.
    func connectedClient() throws -> OpaquePointer {
        if let client, !clientFailed {
            return client
        }
        if let stale = client {
            avahi_client_free(stale)
            client = nil
        }
        var error: Int32 = 0
        let created = avahi_client_new(
            pollAPI,
            AvahiClientFlags(rawValue: 0),
            { client, state, userdata in
                guard let client, let userdata else { return }
                Unmanaged<AvahiConnection>.fromOpaque(userdata).takeUnretainedValue()
                    .clientStateChanged(client, state)
            },
            Unmanaged.passUnretained(self).toOpaque(),
            &error
        )
        guard let created else {
            throw AvahiErrorMapping.nearbyError(error, while: "connecting to avahi-daemon")
        }
        client = created
        clientFailed = false
        return created
    }

    /// Whether `client` is the current client and the daemon is ready for services to be published. Lock held.
    func isRunning(_ client: OpaquePointer) -> Bool {
        client == self.client && !clientFailed && avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING
    }

    // MARK: Registrations

    /// Starts publishing `registration`; its waiter is resumed once it is established or has failed. Lock held.
    func start(_ registration: AvahiRegistration) {
        guard !registration.isFinished else {
            registration.finish(with: CancellationError())
            return
        }
        let client: OpaquePointer
        do {
            client = try connectedClient()
        } catch {
            registration.finish(with: error)
            return
        }
        registrations[ObjectIdentifier(registration)] = registration
        if isRunning(client) {
            registration.publish(on: client)
        }
        // Otherwise the daemon is still registering its host name; clientStateChanged publishes on RUNNING.
    }

    /// Unpublishes `registration` and forgets it; ends a pending `register` with `error`. Idempotent. Lock held.
    func remove(_ registration: AvahiRegistration, error: any Error = CancellationError()) {
        registrations[ObjectIdentifier(registration)] = nil
        registration.finish(with: error)
    }

    // MARK: Browse sessions

    /// Creates the Avahi browser of `session`, or finishes its stream with an error. Lock held.
    func start(_ session: AvahiBrowseSession) {
        guard !session.isFinished else { return }
        do {
            let client = try connectedClient()
            try session.startBrowser(on: client)
            browseSessions[ObjectIdentifier(session)] = session
        } catch {
            session.finish(throwing: error)
        }
    }

    /// Frees `session`'s browser and resolvers and forgets it. Idempotent. Lock held.
    func stop(_ session: AvahiBrowseSession) {
        browseSessions[ObjectIdentifier(session)] = nil
        session.finish(throwing: nil)
    }

    /// Forgets a session that finished on its own (browser failure). Lock held (poll thread).
    func forget(_ session: AvahiBrowseSession) {
        browseSessions[ObjectIdentifier(session)] = nil
    }

    /// Forgets a registration that failed on its own (collision, failure). Lock held (poll thread).
    func forget(_ registration: AvahiRegistration) {
        registrations[ObjectIdentifier(registration)] = nil
    }

    // MARK: Client state

    /// Reacts to the client's state. Poll thread (or inside `avahi_client_new`), lock held.
    private func clientStateChanged(_ changed: OpaquePointer, _ state: AvahiClientState) {
        // During avahi_client_new `client` is still nil; afterwards ignore anything from a replaced client.
        if let client, client != changed { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            for registration in registrations.values where registration.needsPublishing {
                registration.publish(on: changed)
            }
        case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            // The daemon is (re)establishing its host name: withdraw our records and publish them again on RUNNING.
            for registration in registrations.values {
                registration.reset()
            }
        case AVAHI_CLIENT_FAILURE:
            clientFailed = true
            let error = AvahiErrorMapping.daemonLost(avahi_client_errno(changed))
            let failedRegistrations = registrations.values
            let failedSessions = browseSessions.values
            registrations.removeAll()
            browseSessions.removeAll()
            for registration in failedRegistrations {
                registration.finish(with: error)
            }
            for session in failedSessions {
                session.finish(throwing: error)
            }
        default:
            break
        }
    }
}
