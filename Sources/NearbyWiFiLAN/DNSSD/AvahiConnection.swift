import CAvahiClient
import Dispatch
import NearbyWire

/// One connection to avahi-daemon: an Avahi threaded poll (its own event-loop thread) and an `AvahiClient`, plus
/// the registrations and browse sessions that live on that client.
///
/// Locking: every mutable property here, and in ``AvahiRegistration``, ``AvahiBrowseSession`` and
/// ``AvahiServiceCopy``, is touched only with the threaded poll's lock held — either inside an Avahi callback (the
/// poll thread holds the lock while it dispatches) or inside ``withLock(_:)`` on any other thread. The lock is not
/// recursive and must never be taken on the poll thread, so callbacks never call ``withLock(_:)``.
///
/// Daemon restarts: when avahi-daemon goes away the client fails for good, so the connection frees the Avahi objects
/// that lived on it (entry groups, browsers, resolvers), reports every browsed instance lost, and replaces the
/// client with one made with `AVAHI_CLIENT_NO_FAIL`, which waits for the daemon to come back on the bus. Once it
/// runs again, every live registration is published again (same name, type, port and TXT) and every browse session
/// browses again; its instances are then found again.
///
/// Lifetime: C callbacks get unretained pointers to these objects. That is safe because an object's Avahi handle
/// (entry group, browser, resolver, timeout) is always freed, with the lock held, before the object is dropped, and
/// no callback can run for a freed handle. A callback still holds the object it was called for (a +1 of its own) while
/// it runs, so the last reference to the connection could be dropped on the poll thread, where the loop cannot be
/// stopped (avahi_threaded_poll_stop aborts the process there). So the connection is held through an
/// ``AvahiConnectionOwner``, whose end shuts the connection down on another thread, and keeps it alive until then.
final class AvahiConnection: @unchecked Sendable {
    private let poll: OpaquePointer
    /// The poll's API table, for timeouts.
    let pollAPI: UnsafePointer<AvahiPoll>
    /// The current client, or `nil` before the first connection.
    private(set) var client: OpaquePointer?
    /// Whether `client` reached `AVAHI_CLIENT_FAILURE`; a failed client is replaced at once from `reconnect`, or
    /// on the next request if that comes first.
    private var clientFailed = false
    /// Replaces a failed client outside of its callback.
    private var reconnect: AvahiReconnectTimer?
    private var registrations: [ObjectIdentifier: AvahiRegistration] = [:]
    private var browseSessions: [ObjectIdentifier: AvahiBrowseSession] = [:]
    /// Set by ``shutDown()``.
    private var isShutDown = false
    /// Where the call-outs that callbacks and locked sections decide (resuming a `register`, yielding and finishing
    /// browse streams) run: after the poll's lock is released, in the order they were posted. Resuming a task under
    /// the poll's lock could deadlock against a cancellation handler that takes it (the lock rule,
    /// docs/ARCHITECTURE.md).
    private let callouts = DispatchQueue(label: "nearby.avahi.callouts")

    /// Starts the event loop and a client, which waits for avahi-daemon when it is not running yet
    /// (`AVAHI_CLIENT_NO_FAIL`).
    ///
    /// - Throws: `.mediumUnavailable` when the D-Bus system bus cannot be reached.
    init() throws {
        guard let poll = avahi_threaded_poll_new() else {
            throw NearbyError(.unknown, "could not create the Avahi event loop")
        }
        self.poll = poll
        self.pollAPI = avahi_threaded_poll_get(poll)
        guard avahi_threaded_poll_start(poll) >= 0 else {
            throw NearbyError(.unknown, "could not start the Avahi event-loop thread")
        }
        // Unretained like every other callback's userdata: the timer fires only while the poll thread runs.
        let unretained = Unmanaged.passUnretained(self)
        do {
            try withLock {
                reconnect = AvahiReconnectTimer(pollAPI: pollAPI) { unretained.takeUnretainedValue().replaceFailedClient() }
                _ = try connectedClient()
            }
        } catch {
            shutDown()
            throw error
        }
    }

    /// Stops the event loop and frees every Avahi object. Called once, by the ``AvahiConnectionOwner`` going away
    /// (off the poll thread: stopping joins it), or when `init` fails.
    func shutDown() {
        guard !isShutDown else { return }
        isShutDown = true
        // Afterwards no callback can run and the handles can be freed without the lock.
        avahi_threaded_poll_stop(poll)
        reconnect?.cancel()
        for registration in registrations.values {
            registration.freeGroup()
        }
        for session in browseSessions.values {
            session.freeAvahiObjects()
        }
        if let client {
            avahi_client_free(client)
        }
        self.client = nil
        avahi_threaded_poll_free(poll)
    }

    deinit {
        // Normally shut down by the owner already; this covers a connection that never had one.
        shutDown()
    }

    /// Runs `body` with the event-loop lock held. Never call this from an Avahi callback.
    /// Runs `work` after the poll's lock is released, after every call-out posted before it.
    func post(_ work: @escaping @Sendable () -> Void) {
        callouts.async(execute: work)
    }

    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        return try body()
    }

    /// The current client, connecting (again) if there is none or the last one failed; after the first connection
    /// a new client may still be waiting for the daemon (`AVAHI_CLIENT_CONNECTING`). Lock held.
    func connectedClient() throws -> OpaquePointer {
        if let client, !clientFailed {
            return client
        }
        reconnect?.cancel()
        if let stale = client {
            // Its groups, browsers and resolvers were freed when it failed (clientStateChanged).
            client = nil
            avahi_client_free(stale)
        }
        var error: Int32 = 0
        clientFailed = false
        let created = avahi_client_new(
            pollAPI,
            AVAHI_CLIENT_NO_FAIL,
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
        return created
    }

    /// The reconnect timer fired: replaces the failed client by one that waits for the daemon, or tries again later
    /// when none can be made (no D-Bus system bus). Poll thread, lock held.
    private func replaceFailedClient() {
        guard clientFailed else { return }
        do {
            _ = try connectedClient()
        } catch {
            clientFailed = true
            reconnect?.schedule(afterFailedAttempt: true)
        }
    }

    /// Whether `client` talks to a daemon (running, or establishing its host name). Lock held.
    private func isConnected(_ client: OpaquePointer) -> Bool {
        let state = avahi_client_get_state(client)
        return state == AVAHI_CLIENT_S_RUNNING || state == AVAHI_CLIENT_S_REGISTERING || state == AVAHI_CLIENT_S_COLLISION
    }

    /// Whether `client` is the current client and the daemon is ready for services to be published. Lock held.
    func isRunning(_ client: OpaquePointer) -> Bool {
        client == self.client && !clientFailed && avahi_client_get_state(client) == AVAHI_CLIENT_S_RUNNING
    }

    /// Why nothing is published or browsed while the client waits for the daemon.
    static let daemonNotRunning = NearbyError(
        .mediumUnavailable, "avahi-daemon is not running (waiting for it on the D-Bus system bus)")

    // MARK: Registrations

    /// Starts publishing `registration`; its waiter is resumed once it is established or has failed. While the
    /// daemon is not running, the registration is kept, suspended (its ``AvahiRegistration/problem`` says why), and
    /// its waiter resumed at once: it is published when the daemon runs. Lock held.
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
        guard isConnected(client) else {
            registration.suspend(Self.daemonNotRunning)
            registration.resumeWaiter()
            return
        }
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

    /// Creates the Avahi browser of `session` (or, while the daemon is away, once it is back), or finishes its
    /// stream with an error. With `waitForDaemon` false, a daemon that is not running when browsing starts
    /// finishes the stream with `.mediumUnavailable` instead. Lock held.
    func start(_ session: AvahiBrowseSession, waitForDaemon: Bool) {
        guard !session.isFinished else { return }
        do {
            let client = try connectedClient()
            if isConnected(client) {
                try session.startBrowser(on: client)
            } else if !waitForDaemon {
                throw NearbyError(
                    .mediumUnavailable, "avahi-daemon is not running: nothing can be discovered over mDNS until it starts")
            }
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
            for session in browseSessions.values where session.needsBrowser {
                do {
                    try session.startBrowser(on: changed)
                } catch {
                    browseSessions[ObjectIdentifier(session)] = nil
                    session.finish(throwing: error)
                }
            }
        case AVAHI_CLIENT_S_REGISTERING, AVAHI_CLIENT_S_COLLISION:
            // The daemon is (re)establishing its host name: withdraw our records and publish them again on RUNNING.
            for registration in registrations.values {
                registration.reset()
            }
        case AVAHI_CLIENT_FAILURE:
            // The daemon went away (or the bus): its entry groups, browsers and resolvers are gone. A `register`
            // still waiting fails; published services wait to be published again, browse sessions to browse again.
            clientFailed = true
            let error = AvahiErrorMapping.daemonLost(avahi_client_errno(changed))
            for registration in registrations.values {
                if registration.waiter != nil {
                    registrations[ObjectIdentifier(registration)] = nil
                    registration.finish(with: error)
                } else {
                    registration.suspend(error)
                }
            }
            for session in browseSessions.values {
                session.suspend()
            }
            reconnect?.schedule(afterFailedAttempt: false)
        default:
            break
        }
    }
}

/// Holds an ``AvahiConnection`` for the objects that use it (``AvahiServiceDiscovery``, its registrations and browse
/// streams). When the last of them lets go, on whatever thread, possibly Avahi's own poll thread (a browse stream
/// finished from a callback releases its termination handler there), the connection is shut down on a dispatch
/// thread: the poll thread is joined from there, never from itself.
final class AvahiConnectionOwner: Sendable {
    /// The connection.
    let connection: AvahiConnection

    /// Connects (see ``AvahiConnection/init()``).
    init() throws {
        connection = try AvahiConnection()
    }

    deinit {
        let connection = self.connection
        DispatchQueue.global().async { connection.shutDown() }
    }
}
