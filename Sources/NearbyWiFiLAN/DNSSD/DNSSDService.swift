import NearbyWire

/// A service to publish with ``DNSServiceDiscovery/register(_:)``.
///
/// Limits, checked by ``validate()`` before anything is published:
/// * ``instanceName``: 1 to ``maximumInstanceNameLength`` bytes of UTF-8, no NUL.
/// * ``serviceType``: `_name._tcp` or `_name._udp`, where `name` is 1 to 62 ASCII letters, digits, `-` or `_`.
/// * ``txt``: keys of 1 or more printable ASCII characters other than `=`; each `key=value` string at most
///   ``maximumTXTStringLength`` bytes; the whole record at most ``maximumTXTRecordLength`` bytes.
package struct DNSSDService: Sendable, Hashable {
    /// The longest instance name, in UTF-8 bytes: one DNS label.
    package static let maximumInstanceNameLength = 63
    /// The longest TXT string (`key=value`), in bytes: one length-prefixed DNS character-string.
    package static let maximumTXTStringLength = 255
    /// The largest TXT record, in bytes including each string's length byte; RFC 6763 §6.2 keeps a record this
    /// size inside one 1500-byte Ethernet packet.
    package static let maximumTXTRecordLength = 1300

    /// The instance name, the first DNS label of the service's name (unescaped).
    package var instanceName: String
    /// The service type, for example `"_FC9F5ED42C8A._tcp"`; the domain is always `local`.
    package var serviceType: String
    /// The port the service listens on.
    package var port: UInt16
    /// The TXT record, published as `key=value` strings in ascending key order.
    package var txt: [String: [UInt8]]

    /// Creates a service description; nothing is checked until it is registered (or ``validate()`` is called).
    package init(instanceName: String, serviceType: String, port: UInt16, txt: [String: [UInt8]] = [:]) {
        self.instanceName = instanceName
        self.serviceType = serviceType
        self.port = port
        self.txt = txt
    }

    /// Checks the limits listed on ``DNSSDService``.
    ///
    /// - Throws: `NearbyError` with code `.invalidArgument` naming the first limit that is broken.
    package func validate() throws {
        let nameLength = instanceName.utf8.count
        guard nameLength > 0 else {
            throw NearbyError(.invalidArgument, "DNS-SD instance name is empty")
        }
        guard nameLength <= Self.maximumInstanceNameLength else {
            throw NearbyError(
                .invalidArgument,
                "DNS-SD instance name is \(nameLength) bytes; at most \(Self.maximumInstanceNameLength) allowed"
            )
        }
        guard !instanceName.utf8.contains(0) else {
            throw NearbyError(.invalidArgument, "DNS-SD instance name contains a NUL byte")
        }
        try DNSSDServiceType.validate(serviceType)
        _ = try DNSSDTXTRecord.encode(txt)
    }
}
