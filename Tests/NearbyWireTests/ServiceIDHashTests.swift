import NearbyWire
import Testing

@Suite("SHA-256 and service-ID hashes", .timeLimit(.minutes(5)))
struct ServiceIDHashTests {
    @Test("FIPS 180-4 vectors", arguments: [
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func fipsVectors(_ message: String, _ digest: String) {
        #expect(Hex.encode(SHA256Digest.hash(utf8: message)) == digest)
    }

    @Test("one million 'a' (FIPS vector), fed in uneven pieces")
    func millionA() {
        var hasher = SHA256Digest()
        let piece = [UInt8](repeating: 0x61, count: 999)
        var fed = 0
        while fed + piece.count <= 1_000_000 {
            hasher.update(piece)
            fed += piece.count
        }
        hasher.update([UInt8](repeating: 0x61, count: 1_000_000 - fed))
        #expect(Hex.encode(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("padding boundaries (values computed with Python hashlib)", arguments: [
        (55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"),
        (56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"),
        (63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"),
        (64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"),
        (65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"),
        (119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"),
    ])
    func paddingBoundaries(_ length: Int, _ digest: String) {
        #expect(Hex.encode(SHA256Digest.hash([UInt8](repeating: 0x61, count: length))) == digest)
    }

    @Test("NearbySharing → _FC9F5ED42C8A._tcp")
    func quickShareServiceType() throws {
        let type = ServiceIDHash.wifiLanServiceType(serviceID: "NearbySharing")
        #expect(type.name == "_FC9F5ED42C8A._tcp")
        #expect(type.nameWithTrailingDot == "_FC9F5ED42C8A._tcp.")
        #expect(type.description == "_FC9F5ED42C8A._tcp")
        #expect(type.hash == [0xFC, 0x9F, 0x5E, 0xD4, 0x2C, 0x8A])
        #expect(type.serviceID == "NearbySharing")
        #expect(WifiLanServiceType.domain == "local")
        #expect(try ServiceIDHash.sha256Prefix("NearbySharing", count: 6) == type.hash)
    }

    @Test("3-byte advertisement hash and prefixes")
    func advertisementHash() throws {
        #expect(ServiceIDHash.advertisementHash(serviceID: "NearbySharing") == [0xFC, 0x9F, 0x5E])
        #expect(try ServiceIDHash.sha256Prefix("NearbySharing", count: 0) == [])
        #expect(try ServiceIDHash.sha256Prefix("abc", count: 32) == SHA256Digest.hash(utf8: "abc"))
        expectNearbyError(.invalidArgument) { _ = try ServiceIDHash.sha256Prefix("abc", count: 33) }
        expectNearbyError(.invalidArgument) { _ = try ServiceIDHash.sha256Prefix("abc", count: -1) }
    }

    @Test("PCP wire values")
    func pcpValues() {
        #expect(PCP.p2pStar.rawValue == 1)
        #expect(PCP.p2pCluster.rawValue == 2)
        #expect(PCP.p2pPointToPoint.rawValue == 3)
        #expect(PCP(rawValue: 0) == nil)
        #expect(PCP(rawValue: 4) == nil)
        #expect(PCP.p2pPointToPoint.description == "P2P_POINT_TO_POINT")
    }
}
