import CAvahiClient

/// One copy of a browsed service instance: the instance as seen on one interface over one IP protocol, with the
/// resolver (or retry timeout) that keeps its resolved details current.
///
/// Guarded by the event-loop lock of ``AvahiConnection``; owned by its ``AvahiBrowseSession``.
final class AvahiServiceCopy {
    /// Identifies a copy within a browse session.
    struct Key: Hashable {
        var interfaceIndex: Int32
        var ipProtocol: Int32
        var instanceName: String
    }

    /// What the copy's resolver reported last.
    struct Resolution {
        var hostName: String
        var address: AvahiResolvedAddress?
        var port: UInt16
        var txt: [String: [UInt8]]
        /// Orders resolutions within a session; the most recent one supplies host, port and TXT.
        var sequence: UInt64
    }

    let key: Key
    let domain: String
    /// Whether the browser reported it as published by this host's own avahi-daemon (`AVAHI_LOOKUP_RESULT_LOCAL`):
    /// by a process on this host, not by a device on the network.
    let isLocal: Bool
    unowned let session: AvahiBrowseSession
    /// The live resolver. It stays open after it resolved so that TXT, port and address changes are reported.
    var resolver: OpaquePointer?
    /// The pending retry after a failed resolve.
    var retryTimeout: OpaquePointer?
    var consecutiveFailures = 0
    var resolution: Resolution?

    init(key: Key, domain: String, isLocal: Bool, session: AvahiBrowseSession) {
        self.key = key
        self.domain = domain
        self.isLocal = isLocal
        self.session = session
    }

    /// Frees the resolver and the retry timeout. Lock held, or the event loop stopped.
    func freeAvahiObjects(_ pollAPI: UnsafePointer<AvahiPoll>) {
        if let resolver {
            self.resolver = nil
            avahi_service_resolver_free(resolver)
        }
        if let retryTimeout {
            self.retryTimeout = nil
            pollAPI.pointee.timeout_free(retryTimeout)
        }
    }
}
