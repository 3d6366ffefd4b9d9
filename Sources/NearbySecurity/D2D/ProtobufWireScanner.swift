import NearbyWire

/// Just enough of the protobuf wire format to take the three SecureMessage layers apart without copying.
///
/// The encrypted channel handles every byte of a transfer, so it reads `SecureMessage`, `HeaderAndBody` and
/// `DeviceToDeviceMessage` as byte ranges of the received buffer instead of decoding them into messages that own
/// copies. The rules are protobuf's: fields may come in any order, unknown fields are skipped, the last occurrence
/// of a field wins, and anything truncated or with a reserved wire type is an error.
enum ProtobufWireScanner {
    /// What one top-level field of a message holds.
    enum Value: Equatable {
        /// A varint field's value.
        case varint(UInt64)
        /// A length-delimited field's bytes, as offsets into the scanned buffer.
        case bytes(Range<Int>)
        /// A fixed32 or fixed64 field (the channel's messages use neither).
        case fixed
    }

    /// The last value of each wanted field number (1…15) in `buffer`, indexed by field number.
    /// - Throws: `NearbyError(.malformedMessage)` for truncated or malformed input.
    static func scan(_ buffer: UnsafeRawBufferPointer, maxField: Int) throws(NearbyError) -> [Value?] {
        var fields = [Value?](repeating: nil, count: maxField + 1)
        var index = 0
        while index < buffer.count {
            let key = try readVarint(buffer, &index)
            let fieldNumber = key >> 3
            guard fieldNumber > 0, fieldNumber <= UInt64(UInt32.max >> 3) else {
                throw NearbyError(.malformedMessage, "protobuf field number \(fieldNumber) is invalid")
            }
            let value: Value
            switch key & 7 {
            case 0:
                value = .varint(try readVarint(buffer, &index))
            case 1:
                try skip(8, buffer, &index)
                value = .fixed
            case 2:
                let length = try readVarint(buffer, &index)
                guard length <= UInt64(buffer.count - index) else {
                    throw NearbyError(.malformedMessage, "protobuf field \(fieldNumber) runs past the end")
                }
                value = .bytes(index..<(index + Int(length)))
                index += Int(length)
            case 5:
                try skip(4, buffer, &index)
                value = .fixed
            default:
                throw NearbyError(.malformedMessage, "protobuf wire type \(key & 7) is not supported")
            }
            if fieldNumber <= UInt64(maxField) {
                fields[Int(fieldNumber)] = value
            }
        }
        return fields
    }

    /// Reads a base-128 varint of at most 10 bytes at `index`.
    static func readVarint(_ buffer: UnsafeRawBufferPointer, _ index: inout Int) throws(NearbyError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while index < buffer.count, shift < 64 {
            let byte = buffer[index]
            index += 1
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
        throw NearbyError(.malformedMessage, "protobuf varint is truncated or longer than 10 bytes")
    }

    private static func skip(_ count: Int, _ buffer: UnsafeRawBufferPointer, _ index: inout Int) throws(NearbyError) {
        guard buffer.count - index >= count else {
            throw NearbyError(.malformedMessage, "protobuf fixed-width field is truncated")
        }
        index += count
    }

    /// Appends `value` as a base-128 varint.
    static func appendVarint(_ value: UInt64, to output: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            output.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        output.append(UInt8(value))
    }

    /// The number of bytes `value` takes as a varint.
    static func varintLength(_ value: UInt64) -> Int {
        var value = value
        var length = 1
        while value >= 0x80 {
            value >>= 7
            length += 1
        }
        return length
    }
}
