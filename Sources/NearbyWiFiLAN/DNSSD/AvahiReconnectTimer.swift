import CAvahiClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A one-shot timeout on an Avahi event loop, used to replace a failed `AvahiClient` outside of its own callback.
///
/// A client that was connected and loses avahi-daemon goes to `AVAHI_CLIENT_FAILURE` (`AVAHI_ERR_DISCONNECTED`)
/// and has already closed its D-Bus connection; `AVAHI_CLIENT_NO_FAIL` only covers a daemon missing when the
/// client is created. Such a client never recovers: it has to be freed and a new one (with `AVAHI_CLIENT_NO_FAIL`,
/// which waits for the daemon's name on the bus) created. Freeing it inside its state callback would free the
/// D-Bus connection that is dispatching the callback, so the replacement runs from this timeout instead.
///
/// All state is guarded by the event loop's lock (callbacks hold it; other threads take it around every call).
final class AvahiReconnectTimer: @unchecked Sendable {
    /// The longest pause between attempts when no client can be made at all (no D-Bus system bus), in seconds.
    static let maximumDelaySeconds = 30

    private let pollAPI: UnsafePointer<AvahiPoll>
    private let fire: () -> Void
    private var timeout: OpaquePointer?
    /// Attempts in a row that could not make a client; sets the backoff of the next one.
    private var failedAttempts = 0

    /// A timer on `pollAPI` that runs `fire` (on the poll thread, lock held) when it expires.
    init(pollAPI: UnsafePointer<AvahiPoll>, fire: @escaping () -> Void) {
        self.pollAPI = pollAPI
        self.fire = fire
    }

    /// Schedules `fire`: at once after a client failure, with a growing delay (1 s, 2 s, … 30 s) after attempts
    /// that could not create a client. Replaces a pending schedule. Lock held.
    func schedule(afterFailedAttempt: Bool) {
        cancel()
        failedAttempts = afterFailedAttempt ? failedAttempts + 1 : 0
        let delay = failedAttempts == 0 ? 0 : min(1 << min(failedAttempts - 1, 5), Self.maximumDelaySeconds)
        var when = timeval()
        gettimeofday(&when, nil)
        when.tv_sec += delay
        timeout = pollAPI.pointee.timeout_new(
            pollAPI,
            &when,
            { timeout, userdata in
                guard let timeout, let userdata else { return }
                Unmanaged<AvahiReconnectTimer>.fromOpaque(userdata).takeUnretainedValue().expired(timeout)
            },
            Unmanaged.passUnretained(self).toOpaque()
        )
    }

    /// Cancels a pending schedule. Lock held, or the event loop stopped.
    func cancel() {
        if let timeout {
            self.timeout = nil
            pollAPI.pointee.timeout_free(timeout)
        }
    }

    /// Poll thread, lock held.
    private func expired(_ expired: OpaquePointer) {
        guard expired == timeout else { return }
        timeout = nil
        pollAPI.pointee.timeout_free(expired)
        fire()
    }
}
