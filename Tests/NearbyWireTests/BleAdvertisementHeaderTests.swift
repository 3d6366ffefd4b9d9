import NearbyTestSupport
import NearbyWire
import Testing

@Suite("MurmurHash3_x64_128", .timeLimit(.minutes(5)))
struct MurmurHash3Tests {
    // Published vectors (SMHasher-compatible implementations), hex of h1 then h2, each little-endian.
    @Test("published vectors", arguments: [
        ("", UInt32(0), "00000000000000000000000000000000"),
        ("The quick brown fox jumps over the lazy dog", UInt32(0), "6c1b07bc7bbc4be347939ac4a93c437a"),
        ("The quick brown fox jumps over the lazy cog", UInt32(0), "9a2685ff70a98c653e5c8ea6eae3fe43"),
        ("The quick brown fox jumps over the lazy dog", UInt32(0x9747_B28C), "213163d23b7f8a73e516c07e727345f9"),
        ("", UInt32(0x9747_B28C), "b3bbaa1d8a202b397a9502e38f60b093"),
    ])
    func publishedVectors(_ message: String, _ seed: UInt32, _ digest: String) {
        #expect(Hex.encode(MurmurHash3.x64Hash128(utf8: message, seed: seed).bytes) == digest)
    }

    // Computed once with an independent Python implementation (which reproduces the published vectors above).
    @Test("tail lengths", arguments: [
        ("a", UInt64(0x8555_5565_F659_7889), UInt64(0xE6B5_3A48_510E_895A)),
        ("abc", UInt64(0xB496_3F3F_3FAD_7867), UInt64(0x3BA2_7441_26CA_2D52)),
        ("NearbySharing", UInt64(0x7985_79C2_52D5_FE64), UInt64(0x94D2_C58B_CC87_064A)),
        ("0123456789abcdef", UInt64(0x4BE0_6D94_CF4A_D1A7), UInt64(0x87C3_5B5C_63A7_08DA)),
        ("0123456789abcdefg", UInt64(0x8E32_612D_AA45_F9DE), UInt64(0x0800_F4C2_06C3_72EE)),
    ])
    func tailLengths(_ message: String, _ low: UInt64, _ high: UInt64) {
        #expect(MurmurHash3.x64Hash128(utf8: message) == MurmurHash3.Hash128(low: low, high: high))
    }
}

@Suite("BLE service-ID Bloom filter and advertisement header", .timeLimit(.minutes(5)))
struct BleAdvertisementHeaderTests {
    @Test("Bloom filter known answers (computed independently in Python)")
    func bloomFilterVectors() throws {
        var filter = BleServiceIDBloomFilter()
        #expect(filter.bytes == Array(repeating: 0, count: 10))
        #expect(!filter.possiblyContains("NearbySharing"))
        filter.add("NearbySharing")
        #expect(filter.bytes == advertisementTestBytes(hex: "20000010020000030000"))
        #expect(filter.possiblyContains("NearbySharing"))

        var two = BleServiceIDBloomFilter()
        two.add("ELEMENT_1")
        two.add("ELEMENT_2")
        #expect(two.bytes == advertisementTestBytes(hex: "00101420040404600000"))
        #expect(two.possiblyContains("ELEMENT_1") && two.possiblyContains("ELEMENT_2"))
        #expect(try BleServiceIDBloomFilter(bytes: two.bytes) == two)
        expectNearbyError(.invalidArgument) { _ = try BleServiceIDBloomFilter(bytes: [0]) }
    }

    @Test("Bloom filter positions stay within 80 bits and added elements are always found")
    func bloomFilterProperties() {
        var generator = SeededGenerator(seed: 80)
        for _ in 0..<500 {
            let element = generator.bytes(Int.random(in: 0...128, using: &generator))
            let positions = BleServiceIDBloomFilter.bitPositions(of: element)
            #expect(positions.count == 5)
            #expect(positions.allSatisfy { (0..<80).contains($0) })
            var filter = BleServiceIDBloomFilter()
            filter.add(element)
            #expect(filter.possiblyContains(element))
        }
    }

    @Test("header layout and round trip")
    func headerLayout() throws {
        var filter = BleServiceIDBloomFilter()
        filter.add("NearbySharing")
        let header = try BleAdvertisementHeader(
            supportsExtendedAdvertisement: true, slotCount: 1, serviceIDBloomFilter: filter,
            advertisementHash: [1, 2, 3, 4], psm: 0x0080)
        #expect(header.encodedBytes == advertisementTestBytes(hex: "51 20000010020000030000 01020304 0080"))
        #expect(try BleAdvertisementHeader(decoding: header.encodedBytes) == header)

        let noExtended = try BleAdvertisementHeader(
            supportsExtendedAdvertisement: false, slotCount: 15, serviceIDBloomFilter: filter, advertisementHash: [9, 9, 9, 9])
        #expect(noExtended.encodedBytes.first == 0x4F)
        #expect(noExtended.encodedBytes.count == 17)
        #expect(try BleAdvertisementHeader(decoding: noExtended.encodedBytes) == noExtended)
    }

    @Test("accepts the 15-byte header without PSM")
    func fifteenBytes() throws {
        let decoded = try BleAdvertisementHeader(decoding: advertisementTestBytes(hex: "42 20000010020000030000 01020304"))
        #expect(decoded.psm == 0)
        #expect(decoded.slotCount == 2)
        #expect(!decoded.supportsExtendedAdvertisement)
        #expect(decoded.serviceIDBloomFilter.possiblyContains("NearbySharing"))
        #expect(decoded.advertisementHash == [1, 2, 3, 4])
    }

    @Test("rejects malformed headers", arguments: [
        ("empty", ""),
        ("14 bytes", "42 20000010020000030000 010203"),
        ("16 bytes", "42 20000010020000030000 01020304 00"),
        ("18 bytes", "42 20000010020000030000 01020304 0000 00"),
        ("version 1", "22 20000010020000030000 01020304 0000"),
        ("version 3", "62 20000010020000030000 01020304 0000"),
    ])
    func rejectsMalformed(_ label: String, _ hex: String) {
        expectNearbyError(.invalidAdvertisement) { _ = try BleAdvertisementHeader(decoding: advertisementTestBytes(hex: hex)) }
    }

    @Test("rejects bad caller input")
    func rejectsBadArguments() {
        expectNearbyError(.invalidArgument) {
            _ = try BleAdvertisementHeader(
                supportsExtendedAdvertisement: false, slotCount: 16, serviceIDBloomFilter: .init(), advertisementHash: [1, 2, 3, 4])
        }
        expectNearbyError(.invalidArgument) {
            _ = try BleAdvertisementHeader(
                supportsExtendedAdvertisement: false, slotCount: -1, serviceIDBloomFilter: .init(), advertisementHash: [1, 2, 3, 4])
        }
        expectNearbyError(.invalidArgument) {
            _ = try BleAdvertisementHeader(
                supportsExtendedAdvertisement: false, slotCount: 1, serviceIDBloomFilter: .init(), advertisementHash: [1, 2, 3])
        }
    }

    @Test("chained advertisement hash (computed independently in Python)")
    func chainedHash() {
        let dummy = [UInt8](repeating: 0, count: 128)
        #expect(BleAdvertisementHeader.advertisementHash(dummyServiceID: dummy, slotAdvertisements: []) == advertisementTestBytes(hex: "38723a2e"))
        #expect(
            BleAdvertisementHeader.advertisementHash(dummyServiceID: dummy, slotAdvertisements: [[1, 2, 3]])
                == advertisementTestBytes(hex: "8043630c"))
        #expect(
            BleAdvertisementHeader.advertisementHash(dummyServiceID: dummy, slotAdvertisements: [[1, 2, 3], [4, 5]])
                == advertisementTestBytes(hex: "896bfb52"))
    }
}
