import CAvahiClient

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An address reported by an Avahi resolver, in textual form.
struct AvahiResolvedAddress: Hashable {
    /// `"192.168.1.5"`, `"2001:db8::1"`, or `"fe80::1%eth0"` for an IPv6 link-local address (RFC 4007 zone).
    var text: String
    var isIPv4: Bool
    var interfaceIndex: Int32

    /// Formats `address`, seen on interface `interfaceIndex`; `nil` if Avahi cannot print it.
    init?(_ address: UnsafePointer<AvahiAddress>, interfaceIndex: Int32) {
        var buffer = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
        let printed = buffer.withUnsafeMutableBufferPointer { pointer in
            avahi_address_snprint(pointer.baseAddress, pointer.count, address) != nil
        }
        guard printed else { return nil }
        var text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let isIPv4 = address.pointee.proto == AvahiProtocol(AVAHI_PROTO_INET)
        if !isIPv4, interfaceIndex > 0, Self.isLinkLocalIPv6(address) {
            text += "%" + Self.interfaceName(interfaceIndex)
        }
        self.text = text
        self.isIPv4 = isIPv4
        self.interfaceIndex = interfaceIndex
    }

    /// Whether the IPv6 address is in fe80::/10.
    private static func isLinkLocalIPv6(_ address: UnsafePointer<AvahiAddress>) -> Bool {
        withUnsafeBytes(of: address.pointee.data) { bytes in
            bytes.count >= 2 && bytes[0] == 0xFE && (bytes[1] & 0xC0) == 0x80
        }
    }

    /// The interface's name, or its decimal index when the name is unknown.
    private static func interfaceName(_ index: Int32) -> String {
        var name = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        let found = name.withUnsafeMutableBufferPointer { pointer in
            if_indextoname(UInt32(index), pointer.baseAddress!) != nil
        }
        guard found else { return String(index) }
        return String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
