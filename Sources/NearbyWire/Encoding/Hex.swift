/// Lower-case hexadecimal text for bytes, as the CLI prints endpoint info and digests.
package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `bytes` as lower-case hex, two characters per byte.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes spelled by `text` (upper or lower case, no separators).
    /// - Throws: ``NearbyError/Code-swift.struct/invalidArgument`` for an odd length or a non-hex character.
    package static func decode(_ text: String) throws(NearbyError) -> [UInt8] {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else {
            throw NearbyError(.invalidArgument, "hex text has an odd number of characters")
        }
        var out = [UInt8]()
        out.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = value(characters[index]), let low = value(characters[index + 1]) else {
                throw NearbyError(.invalidArgument, "hex text contains a non-hex character")
            }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func value(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
