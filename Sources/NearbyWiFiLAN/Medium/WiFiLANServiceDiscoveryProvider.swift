import NearbyCore

/// Creates the DNS-SD client of a ``WiFiLANMedium`` on first use and keeps it.
///
/// A failed creation is not remembered: the next call tries again, so a medium recovers once avahi-daemon starts.
final class WiFiLANServiceDiscoveryProvider: Sendable {
    private let factory: @Sendable () throws -> any DNSServiceDiscovery
    private let cached = LockedValue<(any DNSServiceDiscovery)?>(nil)

    /// Wraps `factory`, which is called until it succeeds once.
    init(factory: @escaping @Sendable () throws -> any DNSServiceDiscovery) {
        self.factory = factory
    }

    /// The DNS-SD client, created now if there is none yet.
    ///
    /// - Throws: whatever the factory throws (``AvahiServiceDiscovery`` throws `.mediumUnavailable` when
    ///   avahi-daemon is not running).
    func serviceDiscovery() throws -> any DNSServiceDiscovery {
        try cached.withLock { cached in
            if let cached {
                return cached
            }
            let created = try factory()
            cached = created
            return created
        }
    }
}
