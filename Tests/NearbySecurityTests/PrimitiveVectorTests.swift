import Crypto
import NearbySecurity
import NearbyWire
import Testing

/// Published known-answer vectors for every primitive the protocol uses, and the protocol's own constants.
struct PrimitiveVectorTests {
    @Test("HKDF-SHA256 matches RFC 5869 test case 1", .timeLimit(.minutes(5)))
    func hkdfRFC5869Case1() throws {
        let ikm = [UInt8](repeating: 0x0B, count: 22)
        let salt = try Hex.decode("000102030405060708090a0b0c")
        let info = try Hex.decode("f0f1f2f3f4f5f6f7f8f9")
        let okm = CryptoPrimitives.hkdfSHA256(inputKeyMaterial: ikm, salt: salt, info: info, count: 42)
        #expect(
            Hex.encode(okm)
                == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    @Test("HKDF-SHA256 matches RFC 5869 test case 3 (empty salt and info)", .timeLimit(.minutes(5)))
    func hkdfRFC5869Case3() {
        let ikm = [UInt8](repeating: 0x0B, count: 22)
        let okm = CryptoPrimitives.hkdfSHA256(inputKeyMaterial: ikm, salt: [UInt8](), info: [UInt8](), count: 42)
        #expect(
            Hex.encode(okm)
                == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test("HMAC-SHA256 matches RFC 4231 test cases 1 and 2", .timeLimit(.minutes(5)))
    func hmacRFC4231() {
        let case1 = CryptoPrimitives.hmacSHA256(key: [UInt8](repeating: 0x0B, count: 20), Array("Hi There".utf8))
        #expect(Hex.encode(case1) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        let case2 = CryptoPrimitives.hmacSHA256(
            key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(case2) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test("AES-256-CBC matches NIST SP 800-38A F.2.5 and pads with PKCS#7", .timeLimit(.minutes(5)))
    func aesCBCNIST() throws {
        let key = SymmetricKey(data: try Hex.decode("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"))
        let iv = try Hex.decode("000102030405060708090a0b0c0d0e0f")
        let plaintext = try Hex.decode(
            "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                + "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
        let expected =
            "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
            + "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b"
        let ciphertext = try CryptoPrimitives.aesCBCEncrypt(key: key, iv: iv, plaintext: plaintext)
        #expect(ciphertext.count == 80, "a whole block of padding follows block-aligned plaintext")
        #expect(Hex.encode(ciphertext.prefix(64)) == expected)
        #expect(try CryptoPrimitives.aesCBCDecrypt(key: key, iv: iv, ciphertext: ciphertext) == plaintext)
    }

    @Test("SHA-256 and SHA-512 of \"abc\" match FIPS 180-2", .timeLimit(.minutes(5)))
    func shaVectors() {
        #expect(
            Hex.encode(CryptoPrimitives.sha256(Array("abc".utf8)))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            Hex.encode(CryptoPrimitives.sha512(Array("abc".utf8)))
                == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
                + "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
    }

    @Test("The D2D and SecureMessage salts are the protocol's constants", .timeLimit(.minutes(5)))
    func protocolSalts() {
        #expect(
            Hex.encode(D2DKeys.d2dSalt).uppercased()
                == "82AA55A0D397F88346CA1CEE8D3909B95F13FA7DEB1D4AB38376B8256DA85510")
        #expect(
            Hex.encode(D2DKeys.secureMessageSalt).uppercased()
                == "BF9D2A53C63616D75DB0A7165B91C1EF73E537F2427405FA23610A4BE657642E")
        #expect(D2DSecureChannel.publicMetadata == [0x08, 0x0D, 0x10, 0x01])
    }

    @Test("Constant-time comparison compares contents and lengths", .timeLimit(.minutes(5)))
    func constantTimeEquals() {
        #expect(CryptoPrimitives.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!CryptoPrimitives.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!CryptoPrimitives.constantTimeEquals([1, 2, 3], [1, 2]))
    }
}
