/// The 2-byte device token in a ``BleMediumAdvertisement``.
///
/// The reference implementation derives it as the first 2 bytes of SHA-256 of the decimal string of a random
/// `UInt32`; ``generate(using:)`` does the same.
package enum BleDeviceToken {
    /// The token's length in bytes.
    package static let length = 2

    /// The token derived from `seed`: the first 2 bytes of SHA-256 of `String(seed)` (e.g. `"12345"` → `59 94`).
    package static func derive(from seed: UInt32) -> [UInt8] {
        Array(SHA256Digest.hash(utf8: String(seed)).prefix(length))
    }

    /// A new token from a random `UInt32` drawn with `generator`.
    package static func generate<G: RandomNumberGenerator>(using generator: inout G) -> [UInt8] {
        derive(from: UInt32.random(in: .min ... .max, using: &generator))
    }

    /// A new token from a random `UInt32` drawn with the system's random generator.
    package static func generate() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return generate(using: &generator)
    }
}
