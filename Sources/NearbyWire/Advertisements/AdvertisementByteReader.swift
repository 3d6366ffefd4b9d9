/// A bounds-checked cursor over advertisement bytes.
///
/// Every read either returns the requested bytes or throws ``NearbyError`` with code
/// ``NearbyError/Code/invalidAdvertisement`` naming the field that ran past the end, so decoders never index out
/// of range whatever a peer sends.
struct AdvertisementByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0
    /// What is being decoded, for error messages (e.g. `"BLE advertisement"`).
    let context: String

    init(_ bytes: [UInt8], context: String) {
        self.bytes = bytes
        self.context = context
    }

    /// The number of bytes not yet read.
    var remaining: Int { bytes.count - offset }

    /// Reads one byte.
    mutating func readByte(_ field: String) throws -> UInt8 {
        guard remaining >= 1 else { throw truncated(field, needed: 1) }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// Reads `count` bytes.
    mutating func readBytes(_ count: Int, _ field: String) throws -> [UInt8] {
        guard count >= 0, remaining >= count else { throw truncated(field, needed: count) }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Reads a big-endian `UInt16`.
    mutating func readUInt16BigEndian(_ field: String) throws -> UInt16 {
        let raw = try readBytes(2, field)
        return UInt16(raw[0]) << 8 | UInt16(raw[1])
    }

    /// Reads a big-endian `UInt32`.
    mutating func readUInt32BigEndian(_ field: String) throws -> UInt32 {
        let raw = try readBytes(4, field)
        return UInt32(raw[0]) << 24 | UInt32(raw[1]) << 16 | UInt32(raw[2]) << 8 | UInt32(raw[3])
    }

    /// Reads a 4-byte endpoint ID, which must be printable ASCII.
    mutating func readEndpointID() throws -> EndpointID {
        let raw = try readBytes(EndpointID.length, "endpoint ID")
        do {
            return try EndpointID(asciiBytes: raw)
        } catch let error as NearbyError {
            throw NearbyError(.invalidAdvertisement, "\(context): \(error.message)", cause: error)
        }
    }

    /// An ``NearbyError/Code/invalidAdvertisement`` error about this context.
    func invalid(_ message: String) -> NearbyError {
        NearbyError(.invalidAdvertisement, "\(context): \(message)")
    }

    private func truncated(_ field: String, needed: Int) -> NearbyError {
        invalid("\(field) needs \(needed) bytes at offset \(offset), only \(remaining) left")
    }
}
