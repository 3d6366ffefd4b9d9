import NearbyWire

#if canImport(Glibc)
import Glibc
#endif

/// Which addresses learned from mDNS we may connect to without the user naming them (a subscription fetching a
/// large message, a publication delivering to an interested subscriber, `connect` to a discovered endpoint).
///
/// Anyone on the LAN can answer mDNS, so a record's addresses are a stranger's choice: one pointing at
/// `127.0.0.1:PORT` (or at this host's own LAN address) would make every subscriber connect to a local service of
/// the stranger's choosing with no user action. The rules are those of a bandwidth upgrade path
/// (`UpgradeAddressRules`: no unspecified, multicast, broadcast, reserved or IPv4-compatible address) with two
/// differences for discovery:
///
/// - loopback addresses and this host's own addresses are taken only from records this host's own mDNS daemon
///   published (a process on this host advertised them, `AVAHI_LOOKUP_RESULT_LOCAL`), never from records heard
///   from the network;
/// - link-local addresses are taken (mDNS itself is link-local: the record was heard on that link, and IPv6 ones
///   carry their interface).
///
/// A refused address is dropped from the endpoint's route; an endpoint left without an address is not reported.
/// An address the user gives (`nearby send --address`) is not checked: that is the user's choice.
package struct DiscoveredAddressRules: Sendable {
    /// This host's addresses (4 or 16 bytes; IPv4-mapped IPv6 addresses as their 4 IPv4 bytes).
    package var ownAddresses: Set<[UInt8]>

    /// Rules with `ownAddresses` as this host's addresses.
    package init(ownAddresses: Set<[UInt8]> = []) {
        self.ownAddresses = ownAddresses
    }

    /// The rules with the host's current addresses (`getifaddrs`).
    package static func current() -> DiscoveredAddressRules {
        DiscoveredAddressRules(ownAddresses: hostAddresses())
    }

    /// Why `address` (text, an IPv6 one possibly with a `%zone`) must not be connected to, or `nil`.
    package func refusal(_ address: String, fromLocalRecord: Bool) -> String? {
        guard let bytes = Self.parse(address) else { return "not an IP address" }
        switch UpgradeAddressRules.refusal(bytes) {
        case nil:
            if !fromLocalRecord, ownAddresses.contains(Self.normalized(bytes)) {
                return "an address of this host, in a record from the network"
            }
            return nil
        case .loopback?:
            return fromLocalRecord ? nil : "loopback, in a record from the network"
        case .linkLocal?:
            return nil
        case let other?:
            return other.description
        }
    }

    /// The bytes of `text` (IPv4 dotted or IPv6, a `%zone` ignored); `nil` when it is neither.
    package static func parse(_ text: String) -> [UInt8]? {
        let host = text.split(separator: "%", maxSplits: 1).first.map(String.init) ?? text
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// An IPv4-mapped IPv6 address as its IPv4 bytes; any other address as it is.
    static func normalized(_ bytes: [UInt8]) -> [UInt8] {
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return Array(bytes[12..<16])
        }
        return bytes
    }

    /// The addresses of this host's interfaces.
    static func hostAddresses() -> Set<[UInt8]> {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var result = Set<[UInt8]>()
        var node = list
        while let current = node {
            if let address = current.pointee.ifa_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var value = v4.pointee.sin_addr
                        result.insert(withUnsafeBytes(of: &value) { Array($0) })
                    }
                case AF_INET6:
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var value = v6.pointee.sin6_addr
                        result.insert(normalized(withUnsafeBytes(of: &value) { Array($0) }))
                    }
                default:
                    break
                }
            }
            node = current.pointee.ifa_next
        }
        return result
    }
}
