import CAvahiClient
import NearbyWire

/// Watches whether avahi-daemon is running, through an Avahi client of its own created with
/// `AVAHI_CLIENT_NO_FAIL`: such a client does not fail when the daemon is absent or goes away, it waits for the
/// daemon to (re)appear on the D-Bus system bus. No polling: the states come from Avahi's callbacks.
///
/// Used to tell when an mDNS problem has cleared (Nearby Messages' radio-state handler).
package final class AvahiDaemonWatch: @unchecked Sendable {
    private let poll: OpaquePointer
    private var client: OpaquePointer?
    private let onChange: @Sendable (_ notRunning: String?) -> Void

    /// Starts watching: `onChange` gets `nil` each time the daemon is running (`AVAHI_CLIENT_S_RUNNING`), or why it
    /// is not, from the first state on, on Avahi's event-loop thread, until the watch is released.
    /// - Throws: `NearbyError` `.mediumUnavailable` when no Avahi client can be made at all (no D-Bus system bus).
    package init(onChange: @escaping @Sendable (_ notRunning: String?) -> Void) throws {
        self.onChange = onChange
        guard let poll = avahi_threaded_poll_new() else {
            throw NearbyError(.unknown, "could not create the Avahi event loop")
        }
        self.poll = poll
        // From here on a throw runs `deinit` (every stored property is set), which stops and frees the poll.
        guard avahi_threaded_poll_start(poll) >= 0 else {
            throw NearbyError(.unknown, "could not start the Avahi event-loop thread")
        }
        avahi_threaded_poll_lock(poll)
        var error: Int32 = 0
        let created = avahi_client_new(
            avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL,
            { client, state, userdata in
                guard let client, let userdata else { return }
                Unmanaged<AvahiDaemonWatch>.fromOpaque(userdata).takeUnretainedValue().changed(client, state)
            },
            Unmanaged.passUnretained(self).toOpaque(), &error)
        client = created
        avahi_threaded_poll_unlock(poll)
        guard created != nil else {
            throw AvahiErrorMapping.nearbyError(error, while: "watching avahi-daemon")
        }
    }

    deinit {
        // Stopping joins the poll thread, so no callback runs afterwards.
        avahi_threaded_poll_stop(poll)
        if let client { avahi_client_free(client) }
        avahi_threaded_poll_free(poll)
    }

    /// Poll thread (or inside `avahi_client_new`), lock held.
    private func changed(_ client: OpaquePointer, _ state: AvahiClientState) {
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            onChange(nil)
        case AVAHI_CLIENT_CONNECTING:
            onChange("avahi-daemon is not running (waiting for it on the D-Bus system bus)")
        case AVAHI_CLIENT_FAILURE:
            onChange("avahi client failed: \(String(cString: avahi_strerror(avahi_client_errno(client))))")
        default:
            // Registering or collision: the daemon runs and is (re)establishing its host name.
            break
        }
    }
}
