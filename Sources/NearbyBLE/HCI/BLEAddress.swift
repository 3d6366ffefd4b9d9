/// A 48-bit Bluetooth device address with its LE address type.
///
/// HCI carries addresses least-significant byte first; ``description`` prints them the usual way, most significant
/// byte first (`C0:00:00:00:00:0A`).
package struct BLEAddress: Hashable, Sendable, CustomStringConvertible {
    /// The LE address type.
    package enum Kind: UInt8, Sendable, Hashable {
        /// A public device address.
        case `public` = 0
        /// A random (here: static random) device address.
        case random = 1
    }

    /// The six address bytes in HCI order (least significant first).
    package let bytes: [UInt8]
    /// Public or random.
    package let kind: Kind

    /// Creates an address from its six HCI-order bytes.
    package init?(hciBytes: [UInt8], kind: Kind) {
        guard hciBytes.count == 6 else { return nil }
        self.bytes = hciBytes
        self.kind = kind
    }

    /// Parses `AA:BB:CC:DD:EE:FF`, optionally followed by `/public` or `/random` (the default is random, which
    /// this host always uses itself).
    package init?(string: String) {
        var text = Substring(string)
        var kind = Kind.random
        if let slash = text.firstIndex(of: "/") {
            switch text[text.index(after: slash)...] {
            case "public": kind = .public
            case "random": kind = .random
            default: return nil
            }
            text = text[..<slash]
        }
        let parts = text.split(separator: ":")
        guard parts.count == 6 else { return nil }
        var bytes: [UInt8] = []
        for part in parts.reversed() {
            guard part.count == 2, let byte = UInt8(part, radix: 16) else { return nil }
            bytes.append(byte)
        }
        self.bytes = bytes
        self.kind = kind
    }

    /// A fresh static random address: random bytes with the two most significant bits set.
    package static func staticRandom() -> BLEAddress {
        var bytes = (0..<6).map { _ in UInt8.random(in: 0...255) }
        bytes[5] |= 0xC0
        if bytes[0..<5].allSatisfy({ $0 == 0xFF }) { bytes[0] = 0x5A }
        return BLEAddress(hciBytes: bytes, kind: .random)!
    }

    /// `AA:BB:CC:DD:EE:FF` for random addresses, `AA:BB:CC:DD:EE:FF/public` for public ones; ``init(string:)``
    /// reads both.
    package var description: String {
        let hex = bytes.reversed().map { byte in
            let digits = String(byte, radix: 16, uppercase: true)
            return digits.count == 1 ? "0" + digits : digits
        }.joined(separator: ":")
        return kind == .public ? hex + "/public" : hex
    }
}
