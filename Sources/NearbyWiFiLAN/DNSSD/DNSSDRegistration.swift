import NearbyWire

/// A published DNS-SD service; it stays published until ``cancel()`` is called or the registration is
/// deinitialized.
package final class DNSSDRegistration: Sendable {
    private let withdraw: @Sendable () -> Void
    private let currentFailure: @Sendable () -> NearbyError?

    /// Creates a registration for a backend of ``DNSServiceDiscovery``.
    ///
    /// - Parameters:
    ///   - withdraw: Unpublishes the service. Called by ``cancel()`` and on deinitialization, so possibly more
    ///     than once; it must be idempotent and must not block for long.
    ///   - failure: Reports why the backend dropped the service after it was established, or `nil`.
    package init(withdraw: @escaping @Sendable () -> Void, failure: @escaping @Sendable () -> NearbyError?) {
        self.withdraw = withdraw
        self.currentFailure = failure
    }

    /// Why the service is not published; `nil` while it is published, or when ``cancel()`` ended it first.
    ///
    /// `.mediumUnavailable` while the daemon is away (cleared when the backend has published the service again
    /// after the daemon came back); `.unknown` for good when a conflicting service took the name (instance names
    /// are fixed by the Nearby protocol, so a conflict is not resolved by renaming).
    package var failure: NearbyError? { currentFailure() }

    /// Unpublishes the service; peers see it disappear. Calling this again does nothing.
    package func cancel() async {
        withdraw()
    }

    deinit {
        withdraw()
    }
}
