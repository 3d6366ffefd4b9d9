import NearbyTestSupport
import NearbyWire
import Testing

/// Hostile-input tests: every decoder must either decode or throw a `NearbyError` with its documented code,
/// whatever bytes or text it is fed, and whatever it decodes must re-encode to something that decodes the same.
@Suite("Advertisement decoders under hostile input", .timeLimit(.minutes(5)))
struct AdvertisementFuzzTests {
    static let randomInputCount = 10_000
    static let maxRandomLength = 600

    /// Feeds `bytes` to every byte-level decoder.
    static func feedAllByteDecoders(_ bytes: [UInt8]) {
        if let info = decodeOrExpectNearbyError(.invalidAdvertisement, { try WifiLanServiceInfo(decoding: bytes) }) {
            #expect(decodeOrExpectNearbyError(.invalidAdvertisement, { try WifiLanServiceInfo(decoding: info.encodedBytes) }) == info)
            #expect(decodeOrExpectNearbyError(.invalidAdvertisement, { try WifiLanServiceInfo(serviceName: info.serviceName) }) == info)
        }
        for form in [BleConnectionsAdvertisement.Form.regular, .fast] {
            if let advertisement = decodeOrExpectNearbyError(.invalidAdvertisement, { try BleConnectionsAdvertisement(decoding: bytes, form: form) }) {
                let again = decodeOrExpectNearbyError(.invalidAdvertisement) {
                    try BleConnectionsAdvertisement(decoding: advertisement.encodedBytes, form: form)
                }
                #expect(again == advertisement)
            }
        }
        if let advertisement = decodeOrExpectNearbyError(.invalidAdvertisement, { try BleMediumAdvertisement(decoding: bytes) }) {
            #expect(decodeOrExpectNearbyError(.invalidAdvertisement, { try BleMediumAdvertisement(decoding: advertisement.encodedBytes) }) == advertisement)
        }
        if let header = decodeOrExpectNearbyError(.invalidAdvertisement, { try BleAdvertisementHeader(decoding: bytes) }) {
            #expect(decodeOrExpectNearbyError(.invalidAdvertisement, { try BleAdvertisementHeader(decoding: header.encodedBytes) }) == header)
        }
        _ = decodeOrExpectNearbyError(.invalidArgument) { try EndpointID(asciiBytes: bytes) }
        // The same bytes seen as text (lossily) by the base64-based decoders.
        feedAllTextDecoders(String(decoding: bytes, as: UTF8.self))
    }

    /// Feeds `text` to every text-level decoder.
    static func feedAllTextDecoders(_ text: String) {
        if let bytes = decodeOrExpectNearbyError(.invalidArgument, { try WebSafeBase64.decode(text) }) {
            #expect(decodeOrExpectNearbyError(.invalidArgument, { try WebSafeBase64.decode(WebSafeBase64.encode(bytes)) }) == bytes)
        }
        if let info = decodeOrExpectNearbyError(.invalidAdvertisement, { try WifiLanServiceInfo(serviceName: text) }) {
            #expect(decodeOrExpectNearbyError(.invalidAdvertisement, { try WifiLanServiceInfo(serviceName: info.serviceName) }) == info)
        }
        if let endpointInfo = decodeOrExpectNearbyError(.invalidAdvertisement, { try WifiLanTXTRecord.decodeEndpointInfo(text) }) {
            #expect(endpointInfo.count <= WifiLanTXTRecord.maxEndpointInfoLength)
        }
        _ = decodeOrExpectNearbyError(.invalidArgument) { try EndpointID(text) }
    }

    /// Valid encodings of every format, to mutate.
    static func validEncodings() throws -> [[UInt8]] {
        let id = try EndpointID("ABCD")
        let hash = ServiceIDHash.advertisementHash(serviceID: "NearbySharing")
        var filter = BleServiceIDBloomFilter()
        filter.add("NearbySharing")
        let connectionsRegular = try BleConnectionsAdvertisement.regular(
            pcp: .p2pCluster, serviceIDHash: hash, endpointID: id, endpointInfo: Array("Pixel 9".utf8),
            bluetoothMACAddress: [1, 2, 3, 4, 5, 6], uwbAddress: [7, 8], isWebRTCConnectable: true)
        let connectionsFast = try BleConnectionsAdvertisement.fast(
            pcp: .p2pPointToPoint, endpointID: id, endpointInfo: Array("Phone".utf8), uwbAddress: [9])
        return [
            WifiLanServiceInfo(pcp: .p2pPointToPoint, endpointID: id, serviceID: "NearbySharing").encodedBytes,
            try WifiLanServiceInfo(pcp: .p2pStar, endpointID: id, serviceIDHash: hash, uwbAddress: [1, 2, 3], isWebRTCConnectable: true)
                .encodedBytes,
            connectionsRegular.encodedBytes,
            connectionsFast.encodedBytes,
            try BleMediumAdvertisement.regular(
                serviceIDHash: hash, data: connectionsRegular.encodedBytes, deviceToken: [0x59, 0x94], psm: 0x0081,
                rxInstantConnectionData: [1, 2, 3]
            ).encodedBytes,
            try BleMediumAdvertisement.fast(data: connectionsFast.encodedBytes, deviceToken: [0x59, 0x94]).encodedBytes,
            try BleAdvertisementHeader(
                supportsExtendedAdvertisement: true, slotCount: 1, serviceIDBloomFilter: filter,
                advertisementHash: [1, 2, 3, 4], psm: 0x0081
            ).encodedBytes,
        ]
    }

    @Test("10,000 random byte strings of 0…600 bytes")
    func randomBytes() {
        var generator = SeededGenerator(seed: 0x5EED_0001)
        for _ in 0..<Self.randomInputCount {
            let length = Int.random(in: 0...Self.maxRandomLength, using: &generator)
            var bytes = generator.bytes(length)
            // Bias a quarter of the inputs towards plausible first bytes so decoders get past the version check.
            if !bytes.isEmpty, Int.random(in: 0..<4, using: &generator) == 0 {
                bytes[0] = [0x21, 0x22, 0x23, 0x48, 0x4A, 0x51, 0x42].randomElement(using: &generator)!
            }
            Self.feedAllByteDecoders(bytes)
        }
    }

    @Test("10,000 random strings over base64-ish characters")
    func randomText() {
        var generator = SeededGenerator(seed: 0x5EED_0002)
        let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") + Array("=+/ .\n\u{0}é€🙂")
        for _ in 0..<Self.randomInputCount {
            let length = Int.random(in: 0...300, using: &generator)
            var text = ""
            let cleanOnly = Int.random(in: 0..<2, using: &generator) == 0
            for _ in 0..<length {
                text.append(cleanOnly ? characters[Int.random(in: 0..<64, using: &generator)] : characters.randomElement(using: &generator)!)
            }
            if Int.random(in: 0..<4, using: &generator) == 0 {
                text += String(repeating: "=", count: Int.random(in: 1...3, using: &generator))
            }
            Self.feedAllTextDecoders(text)
        }
    }

    @Test("every single-bit flip of valid encodings")
    func bitFlips() throws {
        for valid in try Self.validEncodings() {
            for bit in 0..<(valid.count * 8) {
                var mutated = valid
                mutated[bit / 8] ^= 1 << UInt8(bit % 8)
                Self.feedAllByteDecoders(mutated)
            }
        }
    }

    @Test("random multi-byte corruption of valid encodings")
    func randomCorruption() throws {
        var generator = SeededGenerator(seed: 0x5EED_0003)
        let valid = try Self.validEncodings()
        for _ in 0..<3000 {
            var mutated = valid.randomElement(using: &generator)!
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let index = Int.random(in: 0..<mutated.count, using: &generator)
                mutated[index] = UInt8.random(in: .min ... .max, using: &generator)
            }
            Self.feedAllByteDecoders(mutated)
        }
    }

    @Test("every truncation and random extensions of valid encodings")
    func truncationsAndExtensions() throws {
        var generator = SeededGenerator(seed: 0x5EED_0004)
        for valid in try Self.validEncodings() {
            for length in 0..<valid.count {
                Self.feedAllByteDecoders(Array(valid.prefix(length)))
                Self.feedAllTextDecoders(String(WebSafeBase64.encode(valid).prefix(length)))
            }
            for _ in 0..<200 {
                let extended = valid + generator.bytes(Int.random(in: 1...40, using: &generator))
                Self.feedAllByteDecoders(extended)
                Self.feedAllTextDecoders(WebSafeBase64.encode(extended))
            }
        }
    }

    @Test("valid encodings themselves decode")
    func validEncodingsDecode() throws {
        let valid = try Self.validEncodings()
        #expect(throws: Never.self) { try WifiLanServiceInfo(decoding: valid[0]) }
        #expect(throws: Never.self) { try WifiLanServiceInfo(decoding: valid[1]) }
        #expect(throws: Never.self) { try BleConnectionsAdvertisement(decoding: valid[2], form: .regular) }
        #expect(throws: Never.self) { try BleConnectionsAdvertisement(decoding: valid[3], form: .fast) }
        #expect(throws: Never.self) { try BleMediumAdvertisement(decoding: valid[4]) }
        #expect(throws: Never.self) { try BleMediumAdvertisement(decoding: valid[5]) }
        #expect(throws: Never.self) { try BleAdvertisementHeader(decoding: valid[6]) }
        #expect(throws: NearbyError.self) { try BleAdvertisementHeader(decoding: valid[0]) }
    }
}
