/// The 80-bit Bloom filter of service IDs in a ``BleAdvertisementHeader``.
///
/// Each added element sets 5 bits. From `h = MurmurHash3_x64_128(element, seed 0)`, take the low 64-bit word and
/// split it into `h1` (its low 32 bits) and `h2` (its high 32 bits); for `i` in 1…5 the combined hash is the
/// 32-bit signed value `h1 + i·h2` (wrapping), bit-inverted when negative, and the bit set is that value mod 80.
/// Bit `p` lives in byte `p / 8` at bit `p % 8` (least significant bit first).
///
/// Advertisers add each advertised service ID plus a random 128-byte dummy ID, so an empty-looking filter never
/// reveals that nothing is advertised. Discoverers check `possiblyContains(_:)` for their own service ID.
package struct BleServiceIDBloomFilter: Hashable, Sendable {
    /// The filter's length in bytes.
    package static let byteCount = 10
    /// The filter's length in bits.
    package static let bitCount = byteCount * 8
    /// How many bits each element sets.
    package static let hashCount = 5
    /// The length of the random dummy service ID advertisers add.
    package static let dummyServiceIDLength = 128

    /// The filter's 10 bytes.
    package private(set) var bytes: [UInt8]

    /// An empty filter.
    package init() {
        bytes = [UInt8](repeating: 0, count: Self.byteCount)
    }

    /// A filter read from an advertisement header.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` unless `bytes` has exactly
    ///   ``byteCount`` bytes.
    package init(bytes: [UInt8]) throws {
        guard bytes.count == Self.byteCount else {
            throw NearbyError(.invalidArgument, "a service-ID Bloom filter has \(Self.byteCount) bytes, got \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// The bit positions (0…79) an element sets.
    package static func bitPositions(of element: [UInt8]) -> [Int] {
        let hash = MurmurHash3.x64Hash128(element, seed: 0).low
        let h1 = UInt32(truncatingIfNeeded: hash)
        let h2 = UInt32(truncatingIfNeeded: hash >> 32)
        return (1...UInt32(hashCount)).map { i in
            var combined = Int32(bitPattern: h1 &+ i &* h2)
            if combined < 0 { combined = ~combined }
            return Int(combined) % bitCount
        }
    }

    /// Adds an element given as raw bytes (the dummy service ID is random bytes).
    package mutating func add(_ element: [UInt8]) {
        for position in Self.bitPositions(of: element) {
            bytes[position / 8] |= 1 << UInt8(position % 8)
        }
    }

    /// Adds a service ID (its UTF-8 bytes).
    package mutating func add(_ serviceID: String) {
        add(Array(serviceID.utf8))
    }

    /// Whether the element may have been added (`false` means it certainly was not).
    package func possiblyContains(_ element: [UInt8]) -> Bool {
        Self.bitPositions(of: element).allSatisfy { bytes[$0 / 8] & (1 << UInt8($0 % 8)) != 0 }
    }

    /// Whether the service ID may have been added (`false` means it certainly was not).
    package func possiblyContains(_ serviceID: String) -> Bool {
        possiblyContains(Array(serviceID.utf8))
    }
}
