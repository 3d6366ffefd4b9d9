/// A change in the set of service instances seen by ``DNSServiceDiscovery/browse(serviceType:)``.
package enum DNSSDBrowseEvent: Sendable, Hashable {
    /// An instance was resolved, or its resolved details changed.
    ///
    /// Treat this as "insert or replace": the same instance name is reported again, with the full merged details,
    /// whenever they change — copies of the instance seen on other interfaces or IP protocols add (or, when
    /// removed, take away) addresses, or its host, port or TXT record changes.
    case found(DNSSDResolvedService)
    /// The instance is gone: the last copy of it (on any interface and IP protocol) was removed.
    ///
    /// Only reported for instances that were reported as ``found(_:)`` before.
    case lost(instanceName: String)
}
