/// The stream framing of Nearby Connections: every message is a 4-byte big-endian signed length followed by exactly
/// that many bytes.
///
/// A length below zero or above ``maxFrameLength`` is an error in both directions. These are pure functions; the
/// SwiftNIO handlers ``LengthPrefixedFrameReader`` and ``LengthPrefixedFrameEncoder`` apply the same rules on a
/// channel, and ``IncrementalFrameReader`` applies them to bytes that arrive in pieces.
package enum LengthPrefixFraming {
    /// The size of the length prefix in bytes.
    package static let prefixLength = 4

    /// The largest frame body accepted or written: 1 MiB, the protocol's default maximum read size.
    package static let maxFrameLength = 1_048_576

    /// Returns `body` preceded by its 4-byte big-endian length.
    /// - Throws: ``NearbyError/Code-swift.struct/invalidFraming`` when the body is longer than ``maxFrameLength``.
    package static func frame(_ body: some Collection<UInt8>) throws(NearbyError) -> [UInt8] {
        let count = body.count
        try checkLength(count)
        var out = [UInt8]()
        out.reserveCapacity(prefixLength + count)
        out.append(contentsOf: encodeLength(count))
        out.append(contentsOf: body)
        return out
    }

    /// The 4 prefix bytes for a body of `count` bytes. The count must already have been checked.
    package static func encodeLength(_ count: Int) -> [UInt8] {
        let value = UInt32(truncatingIfNeeded: count)
        return [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// Reads the body length announced by a 4-byte prefix.
    /// - Throws: ``NearbyError/Code-swift.struct/invalidFraming`` when the prefix is not 4 bytes, is negative, or
    ///   announces more than ``maxFrameLength`` bytes.
    package static func decodeLength(_ prefix: some Collection<UInt8>) throws(NearbyError) -> Int {
        guard prefix.count == prefixLength else {
            throw NearbyError(.invalidFraming, "a length prefix is 4 bytes, got \(prefix.count)")
        }
        var value: UInt32 = 0
        for byte in prefix {
            value = value << 8 | UInt32(byte)
        }
        let length = Int(Int32(bitPattern: value))
        try checkLength(length)
        return length
    }

    /// Splits one complete frame from the front of `bytes`.
    /// - Returns: the body and the number of bytes consumed, or `nil` when `bytes` does not yet hold a whole frame.
    /// - Throws: ``NearbyError/Code-swift.struct/invalidFraming`` for a bad length prefix.
    package static func split(_ bytes: [UInt8]) throws(NearbyError) -> (body: [UInt8], consumed: Int)? {
        guard bytes.count >= prefixLength else { return nil }
        let length = try decodeLength(bytes[0..<prefixLength])
        guard bytes.count >= prefixLength + length else { return nil }
        return (Array(bytes[prefixLength..<(prefixLength + length)]), prefixLength + length)
    }

    static func checkLength(_ length: Int) throws(NearbyError) {
        guard length >= 0 else {
            throw NearbyError(.invalidFraming, "negative frame length \(length)")
        }
        guard length <= maxFrameLength else {
            throw NearbyError(
                .invalidFraming, "frame length \(length) exceeds the maximum of \(maxFrameLength) bytes")
        }
    }
}

/// Collects bytes that arrive in arbitrary pieces and hands out complete frame bodies.
///
/// Memory stays bounded: it never holds more than one frame (at most ``LengthPrefixFraming/maxFrameLength``) plus
/// the piece most recently appended, because a bad prefix is reported as soon as its 4 bytes are in.
package struct IncrementalFrameReader: Sendable {
    private var bytes = ByteAccumulator()

    /// Creates an empty reader.
    package init() {}

    /// The number of buffered bytes not yet returned as part of a frame.
    package var bufferedByteCount: Int { bytes.count }

    /// Adds bytes read from the stream.
    package mutating func append(_ bytes: some Sequence<UInt8>) {
        self.bytes.append(bytes)
    }

    /// Returns the next complete frame body, or `nil` if more bytes are needed.
    /// - Throws: ``NearbyError/Code-swift.struct/invalidFraming`` for a bad length prefix; the reader should then
    ///   be discarded along with its stream.
    package mutating func nextFrame() throws(NearbyError) -> [UInt8]? {
        let prefixLength = LengthPrefixFraming.prefixLength
        guard bytes.count >= prefixLength else { return nil }
        let length = try LengthPrefixFraming.decodeLength(bytes.bytes(at: 0, length: prefixLength))
        guard bytes.count >= prefixLength + length else { return nil }
        let body = Array(bytes.bytes(at: prefixLength, length: length))
        bytes.consume(prefixLength + length)
        return body
    }

    /// Whether the stream may end here: no partial frame is buffered.
    package var isAtFrameBoundary: Bool { bytes.isEmpty }
}
