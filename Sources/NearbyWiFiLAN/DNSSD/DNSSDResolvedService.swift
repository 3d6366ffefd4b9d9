/// A browsed service instance, resolved to a host, addresses, a port and a TXT record.
package struct DNSSDResolvedService: Sendable, Hashable {
    /// The instance name (the first DNS label, unescaped), for example a base64 Nearby endpoint descriptor.
    package var instanceName: String
    /// The service type, for example `"_FC9F5ED42C8A._tcp"`.
    package var serviceType: String
    /// The target host name of the service's SRV record, for example `"phone.local"`.
    package var hostName: String
    /// The host's addresses in textual form, without duplicates: IPv4 addresses first, then IPv6.
    ///
    /// An IPv6 link-local address carries its zone as an RFC 4007 suffix (`"fe80::1%eth0"`), because addresses seen
    /// on different interfaces are merged into one list.
    package var addresses: [String]
    /// The TCP or UDP port of the service.
    package var port: UInt16
    /// The TXT record: each `key=value` string split at its first `=`, values as raw bytes.
    ///
    /// A key without `=` maps to an empty value. When a key repeats, its first occurrence wins (RFC 6763 §6.4).
    package var txt: [String: [UInt8]]
    /// The index of the network interface on which the first of ``addresses`` was resolved.
    package var interfaceIndex: Int32
    /// Those of ``addresses`` that come from records this host's own mDNS daemon published (a process on this host
    /// advertised them), as opposed to records heard from the network: only these may be loopback or this host's
    /// own addresses (``DiscoveredAddressRules``).
    package var addressesFromLocalRecords: Set<String>

    /// Creates a resolved service description.
    package init(
        instanceName: String,
        serviceType: String,
        hostName: String,
        addresses: [String],
        port: UInt16,
        txt: [String: [UInt8]],
        interfaceIndex: Int32,
        addressesFromLocalRecords: Set<String> = []
    ) {
        self.instanceName = instanceName
        self.serviceType = serviceType
        self.hostName = hostName
        self.addresses = addresses
        self.port = port
        self.txt = txt
        self.interfaceIndex = interfaceIndex
        self.addressesFromLocalRecords = addressesFromLocalRecords
    }
}
