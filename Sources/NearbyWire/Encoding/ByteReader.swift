/// A bounds-checked cursor over received bytes: advertisements, HCI and L2CAP packets, message envelopes.
///
/// Every read either returns the requested bytes or throws ``NearbyError`` with the reader's `code`, naming what
/// was being decoded (`context`) and the field that ran past the end, so decoders never index out of range
/// whatever a peer sends. Multi-byte integers are read in the byte order the method names.
package struct ByteReader: Sendable {
    /// All the bytes, read or not.
    package let bytes: [UInt8]
    /// The index of the next byte to read.
    package private(set) var offset = 0
    /// What is being decoded, for error messages (e.g. `"BLE advertisement"`).
    package let context: String
    /// The code of every error this reader throws.
    package let code: NearbyError.Code

    /// A reader at the start of `bytes`, throwing errors with `code` that begin with `context`.
    package init(_ bytes: some Collection<UInt8>, context: String, code: NearbyError.Code) {
        self.bytes = Array(bytes)
        self.context = context
        self.code = code
    }

    /// The number of bytes not yet read.
    package var remaining: Int { bytes.count - offset }

    /// An error with the reader's code, its message prefixed by the context.
    package func error(_ message: String) -> NearbyError {
        NearbyError(code, "\(context): \(message)")
    }

    /// Reads one byte.
    package mutating func readByte(_ field: String) throws(NearbyError) -> UInt8 {
        try readBytes(1, field)[0]
    }

    /// Reads `count` bytes.
    package mutating func readBytes(_ count: Int, _ field: String) throws(NearbyError) -> [UInt8] {
        guard count >= 0, remaining >= count else {
            throw error("\(field) needs \(count) bytes at offset \(offset), only \(remaining) left")
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// Reads a little-endian `UInt16` (HCI, L2CAP).
    package mutating func readUInt16LittleEndian(_ field: String) throws(NearbyError) -> UInt16 {
        let raw = try readBytes(2, field)
        return UInt16(raw[0]) | UInt16(raw[1]) << 8
    }

    /// Reads a big-endian `UInt16` (advertisements).
    package mutating func readUInt16BigEndian(_ field: String) throws(NearbyError) -> UInt16 {
        let raw = try readBytes(2, field)
        return UInt16(raw[0]) << 8 | UInt16(raw[1])
    }

    /// Reads a big-endian `UInt32` (advertisements, message envelopes).
    package mutating func readUInt32BigEndian(_ field: String) throws(NearbyError) -> UInt32 {
        let raw = try readBytes(4, field)
        return UInt32(raw[0]) << 24 | UInt32(raw[1]) << 16 | UInt32(raw[2]) << 8 | UInt32(raw[3])
    }

    /// Reads every byte left (possibly none).
    package mutating func readRest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }

    /// Reads a 4-byte endpoint ID, which must be printable ASCII.
    package mutating func readEndpointID() throws(NearbyError) -> EndpointID {
        let raw = try readBytes(EndpointID.length, "endpoint ID")
        do {
            return try EndpointID(asciiBytes: raw)
        } catch let error as NearbyError {
            throw NearbyError(code, "\(context): \(error.message)", cause: error)
        } catch {
            throw self.error("\(error)")
        }
    }
}
