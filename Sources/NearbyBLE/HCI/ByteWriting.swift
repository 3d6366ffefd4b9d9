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

/// A bounds-checked little-endian reader; every read past the end throws instead of trapping.
struct LEByteReader {
    let bytes: [UInt8]
    private(set) var offset: Int
    let context: String
    let code: NearbyError.Code

    init(_ bytes: some Collection<UInt8>, context: String, code: NearbyError.Code = .malformedHCIPacket) {
        self.bytes = Array(bytes)
        self.offset = 0
        self.context = context
        self.code = code
    }

    var remaining: Int { bytes.count - offset }

    func error(_ message: String) -> NearbyError {
        NearbyError(code, "\(context): \(message)")
    }

    mutating func u8(_ field: String) throws -> UInt8 {
        guard remaining >= 1 else { throw error("truncated at \(field)") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16(_ field: String) throws -> UInt16 {
        guard remaining >= 2 else { throw error("truncated at \(field)") }
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    mutating func take(_ count: Int, _ field: String) throws -> [UInt8] {
        guard count >= 0, remaining >= count else { throw error("truncated at \(field) (\(count) bytes)") }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }
}
