import CAvahiClient
import Dispatch
import NearbyWire

/// Watches whether avahi-daemon is running, through an Avahi client of its own created with
/// `AVAHI_CLIENT_NO_FAIL`: such a client does not fail when the daemon is absent, it waits for the daemon to
/// appear on the D-Bus system bus. No polling: the states come from Avahi's callbacks.
///
/// `AVAHI_CLIENT_NO_FAIL` does not cover a daemon that goes away after the client connected: the client then fails
/// (`AVAHI_CLIENT_FAILURE`, `AVAHI_ERR_DISCONNECTED`) for good. So on failure the watch frees it and creates a new
/// one (from an ``AvahiReconnectTimer``, outside the failed client's callback), which waits for the daemon's next
/// start and reports it running.
///
/// Used to tell when an mDNS problem appears and when it has cleared (Nearby Messages' radio-state handler).
///
/// The event loop lives in an ``AvahiDaemonWatchLoop``; its callbacks hold the loop (a +1 of their own) while they
/// run, so the loop is only ever shut down from here, on a dispatch thread: never on the poll thread, where
/// avahi_threaded_poll_stop aborts the process.
package final class AvahiDaemonWatch: Sendable {
    private let loop: AvahiDaemonWatchLoop

    /// Starts watching: `onChange` gets `nil` each time the daemon is running (`AVAHI_CLIENT_S_RUNNING`), or why it
    /// is not, from the first state on, on Avahi's event-loop thread, until the watch is released.
    /// - Throws: `NearbyError` `.mediumUnavailable` when no Avahi client can be made at all (no D-Bus system bus).
    package init(onChange: @escaping @Sendable (_ notRunning: String?) -> Void) throws {
        loop = try AvahiDaemonWatchLoop(onChange: onChange)
    }

    deinit {
        let loop = self.loop
        DispatchQueue.global().async { loop.shutDown() }
    }
}

/// The event loop and client of an ``AvahiDaemonWatch``.
final class AvahiDaemonWatchLoop: @unchecked Sendable {
    private let poll: OpaquePointer
    private var client: OpaquePointer?
    private var reconnect: AvahiReconnectTimer?
    private let handler: @Sendable (_ notRunning: String?) -> Void
    /// Where the handler runs: after the poll's lock is released, in order (the lock rule, docs/ARCHITECTURE.md).
    private let callouts = DispatchQueue(label: "nearby.avahi.daemon-watch.callouts")
    /// Set by ``shutDown()``.
    private var isShutDown = false

    /// Starts the loop and its client (see ``AvahiDaemonWatch/init(onChange:)``).
    init(onChange: @escaping @Sendable (_ notRunning: String?) -> Void) throws {
        self.handler = onChange
        guard let poll = avahi_threaded_poll_new() else {
            throw NearbyError(.unknown, "could not create the Avahi event loop")
        }
        self.poll = poll
        // From here on a throw runs `deinit` (every stored property is set), which stops and frees the poll.
        guard avahi_threaded_poll_start(poll) >= 0 else {
            throw NearbyError(.unknown, "could not start the Avahi event-loop thread")
        }
        avahi_threaded_poll_lock(poll)
        defer { avahi_threaded_poll_unlock(poll) }
        // Unretained like the client's userdata: the timer only fires while the poll thread runs, which `deinit`
        // stops first.
        let unretained = Unmanaged.passUnretained(self)
        reconnect = AvahiReconnectTimer(pollAPI: avahi_threaded_poll_get(poll)) {
            unretained.takeUnretainedValue().replaceClient()
        }
        var error: Int32 = 0
        client = makeClient(&error)
        guard client != nil else {
            throw AvahiErrorMapping.nearbyError(error, while: "watching avahi-daemon")
        }
    }

    /// Stops the loop (joining its thread, so no callback runs afterwards) and frees the client. Once; off the
    /// poll thread.
    func shutDown() {
        guard !isShutDown else { return }
        isShutDown = true
        avahi_threaded_poll_stop(poll)
        reconnect?.cancel()
        if let client { avahi_client_free(client) }
        client = nil
        avahi_threaded_poll_free(poll)
    }

    deinit {
        // A failed init, or a loop whose watch did not shut it down.
        shutDown()
    }

    /// A new client that waits for the daemon. Lock held.
    private func makeClient(_ error: inout Int32) -> OpaquePointer? {
        avahi_client_new(
            avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL,
            { client, state, userdata in
                guard let client, let userdata else { return }
                Unmanaged<AvahiDaemonWatchLoop>.fromOpaque(userdata).takeUnretainedValue().changed(client, state)
            },
            Unmanaged.passUnretained(self).toOpaque(), &error)
    }

    /// Frees the failed client and makes a new one; retries with backoff when none can be made. Poll thread, lock
    /// held.
    private func replaceClient() {
        if let failed = client {
            client = nil
            avahi_client_free(failed)
        }
        var error: Int32 = 0
        client = makeClient(&error)
        if client == nil {
            onChange("cannot reach avahi-daemon: \(String(cString: avahi_strerror(error)))")
            reconnect?.schedule(afterFailedAttempt: true)
        }
    }

    /// Posts the handler's call for `notRunning`, to run after the lock is released.
    private func onChange(_ notRunning: String?) {
        let handler = self.handler
        callouts.async { handler(notRunning) }
    }

    /// Poll thread (or inside `avahi_client_new`), lock held.
    private func changed(_ changed: OpaquePointer, _ state: AvahiClientState) {
        // While a new client is being created `client` is nil (or still the failed one, freed first).
        if let client, client != changed { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            onChange(nil)
        case AVAHI_CLIENT_CONNECTING:
            onChange("avahi-daemon is not running (waiting for it on the D-Bus system bus)")
        case AVAHI_CLIENT_FAILURE:
            onChange("lost avahi-daemon: \(String(cString: avahi_strerror(avahi_client_errno(changed))))")
            reconnect?.schedule(afterFailedAttempt: false)
        default:
            // Registering or collision: the daemon runs and is (re)establishing its host name.
            break
        }
    }
}
