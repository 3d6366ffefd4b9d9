import NearbyTestSupport
import NearbyWire
import Testing

@Suite("URL-safe base64", .timeLimit(.minutes(5)))
struct WebSafeBase64Tests {
    @Test("RFC 4648 vectors, without padding", arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy"),
    ])
    func rfcVectors(_ plain: String, _ encoded: String) throws {
        #expect(WebSafeBase64.encode(Array(plain.utf8)) == encoded)
        #expect(try WebSafeBase64.decode(encoded) == Array(plain.utf8))
    }

    @Test("uses - and _ instead of + and /")
    func urlSafeAlphabet() throws {
        #expect(WebSafeBase64.encode([0xFB, 0xFF]) == "-_8")
        #expect(WebSafeBase64.encode([0xFF, 0xFF, 0xFF]) == "____")
        #expect(WebSafeBase64.encode([0xF8, 0x00, 0x00]) == "-AAA")
        #expect(try WebSafeBase64.decode("-_8") == [0xFB, 0xFF])
    }

    @Test("accepts correct padding", arguments: [("Zg==", "f"), ("Zm8=", "fo"), ("Zm9v", "foo"), ("Zm9vYg==", "foob")])
    func acceptsPadding(_ encoded: String, _ plain: String) throws {
        #expect(try WebSafeBase64.decode(encoded) == Array(plain.utf8))
    }

    @Test("rejects invalid input", arguments: [
        "Z", "Zm9vY", "Zg=", "Zg===", "Zm8==", "Zm9v=", "====", "=", "Zm9v+A", "Zm9v/A", "Zm 9v", "Zm=9",
        "Zm9v\n", "Zmé", "Zm9v\u{0}", "Zg==Zg",
    ])
    func rejectsInvalid(_ encoded: String) {
        expectNearbyError(.invalidArgument) { _ = try WebSafeBase64.decode(encoded) }
    }

    @Test("round-trips random bytes")
    func roundTrip() throws {
        var generator = SeededGenerator(seed: 64)
        for length in 0..<200 {
            let bytes = generator.bytes(length)
            let encoded = WebSafeBase64.encode(bytes)
            #expect(!encoded.contains("="))
            #expect(encoded.utf8.count == (length * 4 + 2) / 3)
            #expect(try WebSafeBase64.decode(encoded) == bytes)
        }
    }
}
