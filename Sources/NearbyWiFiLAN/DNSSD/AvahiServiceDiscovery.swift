import NearbyWire

/// DNS-SD through avahi-daemon, the mDNS responder of Linux desktops, reached with libavahi-client over the D-Bus
/// system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured).
///
/// Each instance owns one client connection and one Avahi event-loop thread; they end when the instance, every
/// registration it made and every browse stream it returned are gone. When the daemon goes away, browse streams
/// report every instance lost and registrations report `.mediumUnavailable` as their ``DNSSDRegistration/failure``;
/// once it is back (a new client waits for it on the bus), registrations are published again and browse streams
/// browse again, without any call. `register` while the daemon is away (or not started yet) returns a registration
/// whose ``DNSSDRegistration/failure`` says so until the daemon runs and the service is published; `browse` then
/// waits for the daemon when the instance was made with `waitForDaemon`, and fails otherwise.
///
/// Services are published, and browsed, on every interface and IP protocol that avahi-daemon is configured to use.
package final class AvahiServiceDiscovery: DNSServiceDiscovery {
    /// Browse events buffered for a slow consumer; beyond this the oldest pending events are dropped.
    package static let browseEventBufferLimit = 1024

    /// Shared with the registrations and browse streams made here; the connection ends when all are gone.
    private let owner: AvahiConnectionOwner

    /// Whether browsing waits for a daemon that is not running when it starts (instead of failing).
    package let waitForDaemon: Bool

    /// Connects to avahi-daemon, or waits for it on the bus when it is not running.
    ///
    /// - Parameter waitForDaemon: Whether ``browse(serviceType:)`` started while avahi-daemon is not running waits
    ///   for it (Nearby Messages) instead of finishing with `.mediumUnavailable` (Nearby Connections' discovery).
    /// - Throws: `NearbyError` with code `.mediumUnavailable` when the D-Bus system bus cannot be reached.
    package init(waitForDaemon: Bool = false) throws {
        owner = try AvahiConnectionOwner()
        self.waitForDaemon = waitForDaemon
    }

    /// Publishes `service` and returns once Avahi reports it established (after probing, about a second), or at
    /// once while avahi-daemon is not running: the registration's ``DNSSDRegistration/failure`` then says so until
    /// the daemon runs and the service is published.
    ///
    /// - Throws: `.invalidArgument` for a service that breaks the limits of ``DNSSDService``;
    ///   `.mediumUnavailable` when the D-Bus system bus cannot be reached; `.unknown` when the name is already taken on the
    ///   network (the name is not changed) or Avahi fails otherwise; `CancellationError` if the task is cancelled.
    package func register(_ service: DNSSDService) async throws -> DNSSDRegistration {
        try service.validate()
        let txtStrings = try DNSSDTXTRecord.encode(service.txt)
        let owner = self.owner
        let connection = owner.connection
        let registration = AvahiRegistration(service: service, txtStrings: txtStrings, connection: connection)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                connection.withLock {
                    registration.waiter = waiter
                    connection.start(registration)
                }
            }
        } onCancel: {
            connection.withLock { connection.remove(registration) }
        }
        // A cancellation that raced with success has already withdrawn the service.
        if connection.withLock({ registration.isFinished }) {
            throw connection.withLock { registration.failure } ?? CancellationError()
        }
        return DNSSDRegistration(
            withdraw: { owner.connection.withLock { owner.connection.remove(registration) } },
            failure: { owner.connection.withLock { registration.problem } }
        )
    }

    /// Browses `serviceType` in the `local` domain; see ``DNSServiceDiscovery/browse(serviceType:)``.
    ///
    /// Each instance is reported ``DNSSDBrowseEvent/found(_:)`` once one of its copies (one per interface and IP
    /// protocol) resolved, and again with merged addresses when more copies resolve or its details change;
    /// ``DNSSDBrowseEvent/lost(instanceName:)`` comes when its last copy is removed. Resolves that time out (an
    /// instance can be announced before its publisher finished probing) are retried with backoff. The stream
    /// finishes with `.invalidArgument` for a malformed type; when the daemon goes away every instance is reported
    /// lost, and the session browses again once the daemon is back.
    package func browse(serviceType: String) -> AsyncThrowingStream<DNSSDBrowseEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: DNSSDBrowseEvent.self,
            throwing: (any Error).self,
            bufferingPolicy: .bufferingNewest(Self.browseEventBufferLimit)
        )
        do {
            try DNSSDServiceType.validate(serviceType)
        } catch {
            continuation.finish(throwing: error)
            return stream
        }
        let owner = self.owner
        let connection = owner.connection
        let session = AvahiBrowseSession(serviceType: serviceType, continuation: continuation, connection: connection)
        continuation.onTermination = { _ in
            // May run with a task's status lock held (a cancelled consumer), or on a call-out thread: the
            // poll's lock is taken later, on the connection's call-out queue. Stopping is idempotent. The owner,
            // not the connection, is what this handler holds: it may be released on the event-loop thread.
            owner.connection.post { owner.connection.withLock { owner.connection.stop(session) } }
        }
        let waitForDaemon = self.waitForDaemon
        connection.withLock { connection.start(session, waitForDaemon: waitForDaemon) }
        return stream
    }
}
