/// URL-safe ("web-safe") base64, RFC 4648 §5: the alphabet `A–Z a–z 0–9 - _`.
///
/// Nearby Connections uses it for every identifier that travels as text: the Wi-Fi LAN service instance name,
/// the TXT record value `n`, the Bluetooth device name and the 5-character authentication token. The reference
/// implementation (absl `WebSafeBase64Escape`) writes it **without** `=` padding, and reads it with or without
/// padding; ``encode(_:)`` and ``decode(_:)`` do the same.
package enum WebSafeBase64 {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Maps an ASCII byte to its 6-bit value, or `0xFF` when it is not in the alphabet.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() {
            table[Int(character)] = UInt8(index)
        }
        return table
    }()

    private static let paddingCharacter = UInt8(ascii: "=")

    /// Encodes `bytes` as URL-safe base64 without padding.
    ///
    /// Three bytes become four characters; a final group of one or two bytes becomes two or three characters.
    /// For example the bytes `FB FF` encode as `"-_8"`.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= input.count {
            let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
            output.append(alphabet[Int(group & 0x3F)])
            index += 3
        }
        switch input.count - index {
        case 1:
            let group = UInt32(input[index]) << 16
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
        case 2:
            let group = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(alphabet[Int(group >> 18 & 0x3F)])
            output.append(alphabet[Int(group >> 12 & 0x3F)])
            output.append(alphabet[Int(group >> 6 & 0x3F)])
        default:
            break
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes URL-safe base64, padded or unpadded.
    ///
    /// The decoder is strict about characters: anything outside `A–Z a–z 0–9 - _` (including the standard
    /// alphabet's `+` and `/`, whitespace and non-ASCII) is rejected, `=` may appear only at the end and only in
    /// the exact number that completes the last 4-character group, and an input whose length leaves a single
    /// dangling character (length ≡ 1 mod 4) is rejected. Like the reference decoder it ignores the unused low
    /// bits of the last character, so a non-canonical final character still decodes.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` when `string` is not valid
    ///   URL-safe base64. Callers that decode data received from a peer usually rethrow it under a more
    ///   specific code.
    package static func decode(_ string: String) throws -> [UInt8] {
        var characters = Array(string.utf8)

        var paddingCount = 0
        while let last = characters.last, last == paddingCharacter {
            characters.removeLast()
            paddingCount += 1
        }

        let remainder = characters.count % 4
        if remainder == 1 {
            throw NearbyError(.invalidArgument, "base64 input has \(characters.count) data characters; a final group cannot have one character")
        }
        if paddingCount > 0 {
            let expectedPadding = remainder == 0 ? 0 : 4 - remainder
            if paddingCount != expectedPadding {
                throw NearbyError(.invalidArgument, "base64 input has \(paddingCount) padding characters, expected 0 or \(expectedPadding)")
            }
        }

        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 3 / 4)
        var group: UInt32 = 0
        var groupCount = 0
        for (offset, character) in characters.enumerated() {
            let value = decodeTable[Int(character)]
            if value == 0xFF {
                throw NearbyError(.invalidArgument, "base64 input has an invalid character (byte 0x\(String(character, radix: 16))) at offset \(offset)")
            }
            group = group << 6 | UInt32(value)
            groupCount += 1
            if groupCount == 4 {
                output.append(UInt8(truncatingIfNeeded: group >> 16))
                output.append(UInt8(truncatingIfNeeded: group >> 8))
                output.append(UInt8(truncatingIfNeeded: group))
                group = 0
                groupCount = 0
            }
        }
        switch groupCount {
        case 2:
            output.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:
            output.append(UInt8(truncatingIfNeeded: group >> 10))
            output.append(UInt8(truncatingIfNeeded: group >> 2))
        default:
            break
        }
        return output
    }
}
