/// MurmurHash3, the x64 128-bit variant (Austin Appleby's `MurmurHash3_x64_128`).
///
/// Nearby Connections uses it, with seed 0, for the service-ID Bloom filter in a ``BleAdvertisementHeader``
/// (see ``BleServiceIDBloomFilter``). It is not a cryptographic hash.
package enum MurmurHash3 {
    /// The 128-bit hash as the two 64-bit words the reference function produces.
    ///
    /// The canonical byte form of the hash is ``low`` then ``high``, each little-endian (see ``bytes``).
    package struct Hash128: Hashable, Sendable {
        /// The first word (`h1`).
        package let low: UInt64
        /// The second word (`h2`).
        package let high: UInt64

        /// Wraps two words.
        package init(low: UInt64, high: UInt64) {
            self.low = low
            self.high = high
        }

        /// The 16 bytes of the hash: ``low`` little-endian, then ``high`` little-endian.
        package var bytes: [UInt8] {
            (0..<8).map { UInt8(truncatingIfNeeded: low >> (8 * UInt64($0))) }
                + (0..<8).map { UInt8(truncatingIfNeeded: high >> (8 * UInt64($0))) }
        }
    }

    private static let c1: UInt64 = 0x87c3_7b91_1142_53d5
    private static let c2: UInt64 = 0x4cf5_ad43_2745_937f

    /// Hashes `bytes` with MurmurHash3_x64_128.
    package static func x64Hash128(_ bytes: [UInt8], seed: UInt32 = 0) -> Hash128 {
        var h1 = UInt64(seed)
        var h2 = UInt64(seed)
        let blockCount = bytes.count / 16

        for block in 0..<blockCount {
            var k1 = littleEndianWord(bytes, from: block * 16, count: 8)
            var k2 = littleEndianWord(bytes, from: block * 16 + 8, count: 8)

            k1 = mixK1(k1)
            h1 ^= k1
            h1 = rotateLeft(h1, 27) &+ h2
            h1 = h1 &* 5 &+ 0x52dc_e729

            k2 = mixK2(k2)
            h2 ^= k2
            h2 = rotateLeft(h2, 31) &+ h1
            h2 = h2 &* 5 &+ 0x3849_5ab5
        }

        let tailStart = blockCount * 16
        let tailCount = bytes.count - tailStart
        if tailCount > 8 {
            h2 ^= mixK2(littleEndianWord(bytes, from: tailStart + 8, count: tailCount - 8))
        }
        if tailCount > 0 {
            h1 ^= mixK1(littleEndianWord(bytes, from: tailStart, count: min(tailCount, 8)))
        }

        h1 ^= UInt64(bytes.count)
        h2 ^= UInt64(bytes.count)
        h1 = h1 &+ h2
        h2 = h2 &+ h1
        h1 = finalMix(h1)
        h2 = finalMix(h2)
        h1 = h1 &+ h2
        h2 = h2 &+ h1
        return Hash128(low: h1, high: h2)
    }

    /// Hashes the UTF-8 encoding of `string` with MurmurHash3_x64_128.
    package static func x64Hash128(utf8 string: String, seed: UInt32 = 0) -> Hash128 {
        x64Hash128(Array(string.utf8), seed: seed)
    }

    private static func littleEndianWord(_ bytes: [UInt8], from start: Int, count: Int) -> UInt64 {
        var word: UInt64 = 0
        for index in 0..<count {
            word |= UInt64(bytes[start + index]) << (8 * UInt64(index))
        }
        return word
    }

    private static func mixK1(_ k: UInt64) -> UInt64 {
        rotateLeft(k &* c1, 31) &* c2
    }

    private static func mixK2(_ k: UInt64) -> UInt64 {
        rotateLeft(k &* c2, 33) &* c1
    }

    private static func rotateLeft(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }

    private static func finalMix(_ value: UInt64) -> UInt64 {
        var k = value
        k ^= k >> 33
        k = k &* 0xff51_afd7_ed55_8ccd
        k ^= k >> 33
        k = k &* 0xc4ce_b9fe_1a85_ec53
        k ^= k >> 33
        return k
    }
}
