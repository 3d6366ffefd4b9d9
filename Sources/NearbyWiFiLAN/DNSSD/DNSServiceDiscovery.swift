/// A DNS-SD (mDNS service discovery) backend: publishes services and browses for them on the local network.
///
/// The Wi-Fi LAN medium advertises an endpoint by registering a service of type `_<12 hex>._tcp` whose instance
/// name and `n` TXT key carry the endpoint's identity, and discovers endpoints by browsing that type.
/// ``AvahiServiceDiscovery`` is the Linux implementation; other backends can conform to this protocol.
package protocol DNSServiceDiscovery: Sendable {
    /// Publishes `service` on the local network.
    ///
    /// Returns once the service is established (its name has been probed and announced). The service stays
    /// published until the returned registration is cancelled or deinitialized.
    ///
    /// - Throws: `NearbyError` with code `.invalidArgument` when the service is malformed (see ``DNSSDService``),
    ///   `.mediumUnavailable` when the DNS-SD daemon is unreachable, `.unknown` on a name collision or another
    ///   failure. Throws `CancellationError` when the calling task is cancelled first.
    func register(_ service: DNSSDService) async throws -> DNSSDRegistration

    /// Browses for instances of `serviceType` (for example `"_FC9F5ED42C8A._tcp"`) in the `local` domain.
    ///
    /// The stream yields ``DNSSDBrowseEvent/found(_:)`` only once an instance has been resolved (host, addresses,
    /// port and TXT record known), possibly again when its resolved details change, and
    /// ``DNSSDBrowseEvent/lost(instanceName:)`` when it disappears (or the daemon went away; the instances are found
    /// again once it is back). The stream finishes with an error when the service type is malformed or the backend
    /// cannot browse at all; stop browsing by cancelling the consuming task or dropping the stream.
    func browse(serviceType: String) -> AsyncThrowingStream<DNSSDBrowseEvent, any Error>
}
