/// Which addresses a bandwidth upgrade path may send us to (protocol reference §2.6, §9.4).
///
/// A peer picks the addresses of a Wi-Fi LAN upgrade path, so they are attacker-chosen: an address that is not a
/// unicast address of another host on the LAN would make us connect to ourselves (unspecified, loopback, and
/// their IPv4-mapped and IPv4-compatible forms), to a neighbour we did not choose on a link-local segment, or to a
/// group (multicast, broadcast). Such a path is refused as a whole, before any connect attempt, and so is a path
/// with more than ``maxCandidates`` candidates. A subnet's directed broadcast address (e.g. `192.168.1.255/24`)
/// cannot be told apart from a host address without knowing the peer's prefix length, so it is not refused here;
/// the kernel refuses a TCP connect to it anyway.
package enum UpgradeAddressRules {
    /// The most address candidates one upgrade path may offer; the reference offers one per local address.
    package static let maxCandidates = 16

    /// Why an address is refused.
    package enum Refusal: String, Sendable, Hashable, CustomStringConvertible {
        /// Neither 4 nor 16 bytes.
        case malformed = "not 4 or 16 bytes"
        /// `0.0.0.0/8` or `::` (a connect to it reaches this host).
        case unspecified
        /// `127.0.0.0/8` or `::1`, directly or IPv4-mapped/-compatible.
        case loopback
        /// `169.254.0.0/16` or `fe80::/10`, directly or IPv4-mapped/-compatible.
        case linkLocal = "link-local"
        /// `224.0.0.0/4` or `ff00::/8`.
        case multicast
        /// `255.255.255.255`.
        case broadcast
        /// `240.0.0.0/4` (reserved, never a host).
        case reserved
        /// An IPv4-compatible IPv6 address (`::a.b.c.d`, deprecated by RFC 4291) of any other IPv4 address.
        case ipv4Compatible = "IPv4-compatible IPv6"

        /// Whether ``OfflineFrameValidator/Policy/allowsLoopbackUpgradeAddresses`` lets this one through.
        package var isLoopbackOrLinkLocal: Bool { self == .loopback || self == .linkLocal }

        /// The reason, for messages.
        package var description: String { rawValue }
    }

    /// Why `address` (4 or 16 bytes, network order) must not be connected to for an upgrade, or `nil` when it is a
    /// unicast address of some other host.
    package static func refusal(_ address: some Collection<UInt8>) -> Refusal? {
        let bytes = Array(address)
        switch bytes.count {
        case 4:
            return ipv4Refusal(bytes[0], bytes[1], bytes[2], bytes[3])
        case 16:
            return ipv6Refusal(bytes)
        default:
            return .malformed
        }
    }

    private static func ipv4Refusal(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Refusal? {
        if a == 0 { return .unspecified }
        if a == 127 { return .loopback }
        if a == 169 && b == 254 { return .linkLocal }
        if a & 0xF0 == 0xE0 { return .multicast }
        if a == 255 && b == 255 && c == 255 && d == 255 { return .broadcast }
        if a & 0xF0 == 0xF0 { return .reserved }
        return nil
    }

    private static func ipv6Refusal(_ bytes: [UInt8]) -> Refusal? {
        let firstTenZero = bytes[0..<10].allSatisfy { $0 == 0 }
        if firstTenZero && bytes[10] == 0xFF && bytes[11] == 0xFF {
            // IPv4-mapped (::ffff:a.b.c.d): a connect goes to the IPv4 address.
            return ipv4Refusal(bytes[12], bytes[13], bytes[14], bytes[15])
        }
        if firstTenZero && bytes[10] == 0 && bytes[11] == 0 {
            if bytes[12..<15].allSatisfy({ $0 == 0 }) {
                switch bytes[15] {
                case 0: return .unspecified
                case 1: return .loopback
                default: break
                }
            }
            return ipv4Refusal(bytes[12], bytes[13], bytes[14], bytes[15]) ?? .ipv4Compatible
        }
        if bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80 { return .linkLocal }
        if bytes[0] == 0xFF { return .multicast }
        return nil
    }
}
