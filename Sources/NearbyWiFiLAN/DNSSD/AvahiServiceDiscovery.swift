import NearbyWire

/// DNS-SD through avahi-daemon, the mDNS responder of Linux desktops, reached with libavahi-client over the D-Bus
/// system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured).
///
/// Each instance owns one client connection and one Avahi event-loop thread; they end when the instance, every
/// registration it made and every browse stream it returned are gone. When the daemon goes away, browse streams
/// report every instance lost and registrations report `.mediumUnavailable` as their ``DNSSDRegistration/failure``;
/// once it is back (a new client waits for it on the bus), registrations are published again and browse streams
/// browse again, without any call. `register` while the daemon is away throws `.mediumUnavailable`.
///
/// Services are published, and browsed, on every interface and IP protocol that avahi-daemon is configured to use.
package final class AvahiServiceDiscovery: DNSServiceDiscovery {
    /// Browse events buffered for a slow consumer; beyond this the oldest pending events are dropped.
    package static let browseEventBufferLimit = 1024

    private let connection: AvahiConnection

    /// Connects to avahi-daemon.
    ///
    /// - Throws: `NearbyError` with code `.mediumUnavailable` when avahi-daemon is not running or the D-Bus system
    ///   bus cannot be reached.
    package init() throws {
        connection = try AvahiConnection()
    }

    /// Publishes `service` and returns once Avahi reports it established (after probing, about a second).
    ///
    /// - Throws: `.invalidArgument` for a service that breaks the limits of ``DNSSDService``;
    ///   `.mediumUnavailable` when the daemon cannot be reached; `.unknown` when the name is already taken on the
    ///   network (the name is not changed) or Avahi fails otherwise; `CancellationError` if the task is cancelled.
    package func register(_ service: DNSSDService) async throws -> DNSSDRegistration {
        try service.validate()
        let txtStrings = try DNSSDTXTRecord.encode(service.txt)
        let connection = self.connection
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
            withdraw: { connection.withLock { connection.remove(registration) } },
            failure: { connection.withLock { registration.problem } }
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
        let connection = self.connection
        let session = AvahiBrowseSession(serviceType: serviceType, continuation: continuation, connection: connection)
        continuation.onTermination = { _ in
            // May run on the event-loop thread (when the session finishes itself), where the lock must not be
            // taken; clean up from a task instead. Stopping is idempotent.
            Task { connection.withLock { connection.stop(session) } }
        }
        connection.withLock { connection.start(session) }
        return stream
    }
}
