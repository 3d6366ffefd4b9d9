import NearbyWire

/// A Bluetooth UUID: 16 bytes in the usual (big-endian) order, shown and parsed as
/// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`. UUIDs on the Bluetooth base `0000xxxx-0000-1000-8000-00805F9B34FB` have a
/// 16-bit short form, which ATT carries as 2 little-endian bytes; others travel as 16 little-endian bytes.
package struct BLEUUID: Hashable, Sendable, CustomStringConvertible {
    /// The 16 bytes, most significant first.
    package let bytes: [UInt8]

    private static let base: [UInt8] = [0, 0, 0, 0, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]

    /// A 16-bit UUID on the Bluetooth base.
    package init(_ short: UInt16) {
        var bytes = Self.base
        bytes[2] = UInt8(short >> 8)
        bytes[3] = UInt8(short & 0xFF)
        self.bytes = bytes
    }

    /// A UUID from its 16 bytes, most significant first.
    package init(bytes: [UInt8]) {
        precondition(bytes.count == 16, "a UUID has 16 bytes")
        self.bytes = bytes
    }

    /// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (either case); `nil` otherwise.
    package init?(string: String) {
        let hex = String(string.filter { $0 != "-" })
        guard hex.count == 32, let bytes = try? Hex.decode(hex.lowercased()) else { return nil }
        self.bytes = bytes
    }

    /// A UUID from its ATT form: 2 or 16 little-endian bytes; `nil` for other lengths.
    package init?(attBytes: some Collection<UInt8>) {
        let little = Array(attBytes)
        switch little.count {
        case 2: self.init(UInt16(little[0]) | UInt16(little[1]) << 8)
        case 16: self.init(bytes: little.reversed())
        default: return nil
        }
    }

    /// The 16-bit form, when the UUID is on the Bluetooth base.
    package var short: UInt16? {
        guard bytes[0] == 0, bytes[1] == 0, Array(bytes[4...]) == Array(Self.base[4...]) else { return nil }
        return UInt16(bytes[2]) << 8 | UInt16(bytes[3])
    }

    /// The ATT form: 2 little-endian bytes for a 16-bit UUID, else 16.
    package var attBytes: [UInt8] {
        if let short { return [UInt8(short & 0xFF), UInt8(short >> 8)] }
        return bytes.reversed()
    }

    /// The canonical text form, upper case.
    package var description: String {
        let hex = Hex.encode(bytes).uppercased()
        let parts = [hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4), hex.dropFirst(20)]
        return parts.map(String.init).joined(separator: "-")
    }

    /// Primary Service declaration.
    package static let primaryService = BLEUUID(0x2800)
    /// Characteristic declaration.
    package static let characteristic = BLEUUID(0x2803)
    /// Client Characteristic Configuration descriptor.
    package static let clientCharacteristicConfiguration = BLEUUID(0x2902)
}
