import NearbyWire

extension NearbyError.Code {
    /// An HCI packet or event from the controller is malformed or violates the HCI specification.
    public static let malformedHCIPacket = NearbyError.Code(rawValue: "malformedHCIPacket")
    /// The controller answered an HCI command with a non-zero status.
    public static let hciCommandFailed = NearbyError.Code(rawValue: "hciCommandFailed")
    /// An L2CAP packet or signaling command is malformed or violates the L2CAP specification.
    public static let malformedL2CAPPacket = NearbyError.Code(rawValue: "malformedL2CAPPacket")
    /// The peer refused an L2CAP channel, or a channel closed.
    public static let l2capChannelFailed = NearbyError.Code(rawValue: "l2capChannelFailed")
}

/// Little-endian helpers for building HCI and L2CAP packets.
extension Array where Element == UInt8 {
    mutating func appendLE16(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
    }

    mutating func appendLE24(_ value: UInt32) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
        append(UInt8(truncatingIfNeeded: value >> 16))
    }

    mutating func appendLE64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

/// The bounds-checked reader of HCI and L2CAP packets: NearbyWire's `ByteReader`, whose every read past the end
/// throws instead of trapping. HCI and L2CAP are little-endian.
typealias LEByteReader = ByteReader

/// The HCI and L2CAP spellings of `ByteReader`'s reads.
extension ByteReader {
    /// A reader whose errors are ``NearbyError/Code/malformedHCIPacket``.
    init(_ bytes: some Collection<UInt8>, context: String) {
        self.init(bytes, context: context, code: .malformedHCIPacket)
    }

    /// Reads one byte.
    mutating func u8(_ field: String) throws(NearbyError) -> UInt8 { try readByte(field) }

    /// Reads a little-endian `UInt16`.
    mutating func u16(_ field: String) throws(NearbyError) -> UInt16 { try readUInt16LittleEndian(field) }

    /// Reads `count` bytes.
    mutating func take(_ count: Int, _ field: String) throws(NearbyError) -> [UInt8] { try readBytes(count, field) }

    /// Reads every byte left.
    mutating func rest() -> [UInt8] { readRest() }
}
