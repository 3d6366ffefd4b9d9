/// The short header a regular BLE advertiser puts in legacy-advertisement service data (UUID 0xFEF3).
///
/// It tells scanners whether one of their service IDs may be advertised and how many GATT characteristics
/// ("slots") to read for the full ``BleMediumAdvertisement``s:
///
/// | Size | Content |
/// |---|---|
/// | 1 | version 2 in bits 7–5, extended-advertisement flag in bit 4, slot count in bits 3–0 |
/// | 10 | service-ID Bloom filter (``BleServiceIDBloomFilter``) |
/// | 4 | advertisement hash (see ``advertisementHash(dummyServiceID:slotAdvertisements:)``) |
/// | 2 | L2CAP PSM, big-endian, 0 = none |
///
/// ``encodedBytes`` always writes 17 bytes; ``init(decoding:)`` accepts 17, or 15 from older writers without the
/// PSM. (The reference reader first tries the service data as base64; this type handles raw bytes only.)
package struct BleAdvertisementHeader: Hashable, Sendable {
    /// The header format version this type reads and writes.
    package static let version: UInt8 = 2
    /// The length of the advertisement hash.
    package static let advertisementHashLength = 4
    /// The length of a header without the PSM.
    package static let lengthWithoutPSM = 15
    /// The length of a header with the PSM, the one ``encodedBytes`` writes.
    package static let length = 17
    /// The largest slot count the 4-bit field holds.
    package static let maxSlotCount = 15

    private static let extendedAdvertisementFlag: UInt8 = 0x10

    /// Whether the advertiser also sends the full advertisement as an extended advertisement.
    package let supportsExtendedAdvertisement: Bool
    /// The number of GATT advertisement slots (0…15).
    package let slotCount: Int
    /// The Bloom filter of advertised service IDs.
    package let serviceIDBloomFilter: BleServiceIDBloomFilter
    /// The 4-byte hash over the advertised GATT advertisements; it changes whenever they change.
    package let advertisementHash: [UInt8]
    /// The L2CAP PSM, 0 when there is none (or the header was 15 bytes).
    package let psm: UInt16

    /// Creates a header.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` when `slotCount` is outside 0…15
    ///   or `advertisementHash` is not 4 bytes.
    package init(
        supportsExtendedAdvertisement: Bool,
        slotCount: Int,
        serviceIDBloomFilter: BleServiceIDBloomFilter,
        advertisementHash: [UInt8],
        psm: UInt16 = 0
    ) throws {
        guard (0...Self.maxSlotCount).contains(slotCount) else {
            throw NearbyError(.invalidArgument, "a BLE advertisement header has 0 to \(Self.maxSlotCount) slots, got \(slotCount)")
        }
        guard advertisementHash.count == Self.advertisementHashLength else {
            throw NearbyError(.invalidArgument, "an advertisement hash has \(Self.advertisementHashLength) bytes, got \(advertisementHash.count)")
        }
        self.supportsExtendedAdvertisement = supportsExtendedAdvertisement
        self.slotCount = slotCount
        self.serviceIDBloomFilter = serviceIDBloomFilter
        self.advertisementHash = advertisementHash
        self.psm = psm
    }

    /// Decodes a raw header of 15 or 17 bytes.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidAdvertisement`` when the length is neither 15
    ///   nor 17 or the version is not 2.
    package init(decoding bytes: [UInt8]) throws {
        var reader = ByteReader(bytes, context: "BLE advertisement header", code: .invalidAdvertisement)
        guard bytes.count == Self.lengthWithoutPSM || bytes.count == Self.length else {
            throw reader.error("expected \(Self.lengthWithoutPSM) or \(Self.length) bytes, got \(bytes.count)")
        }
        let first = try reader.readByte("version byte")
        guard first >> 5 == Self.version else {
            throw reader.error("unsupported version \(first >> 5)")
        }
        let filterBytes = try reader.readBytes(BleServiceIDBloomFilter.byteCount, "service-ID Bloom filter")
        let hash = try reader.readBytes(Self.advertisementHashLength, "advertisement hash")
        let psm: UInt16 = if reader.remaining >= 2 { try reader.readUInt16BigEndian("PSM") } else { 0 }
        self.supportsExtendedAdvertisement = first & Self.extendedAdvertisementFlag != 0
        self.slotCount = Int(first & 0x0F)
        self.serviceIDBloomFilter = try BleServiceIDBloomFilter(bytes: filterBytes)
        self.advertisementHash = hash
        self.psm = psm
    }

    /// The header's 17 bytes.
    package var encodedBytes: [UInt8] {
        var first = Self.version << 5 | UInt8(slotCount)
        if supportsExtendedAdvertisement { first |= Self.extendedAdvertisementFlag }
        return [first] + serviceIDBloomFilter.bytes + advertisementHash + [UInt8(psm >> 8), UInt8(psm & 0xFF)]
    }

    /// The advertisement hash as the reference advertiser computes it.
    ///
    /// Start from the first 4 bytes of SHA-256 of the dummy service ID; then, for each slot's encoded GATT
    /// advertisement in slot order, replace the hash with the first 4 bytes of SHA-256 of (previous hash ‖
    /// advertisement).
    package static func advertisementHash(dummyServiceID: [UInt8], slotAdvertisements: [[UInt8]]) -> [UInt8] {
        var hash = Array(SHA256Digest.hash(dummyServiceID).prefix(advertisementHashLength))
        for advertisement in slotAdvertisements {
            hash = Array(SHA256Digest.hash(hash + advertisement).prefix(advertisementHashLength))
        }
        return hash
    }
}
