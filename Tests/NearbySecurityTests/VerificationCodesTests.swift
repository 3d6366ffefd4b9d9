import NearbyTestSupport
import NearbySecurity
import Testing

struct VerificationCodesTests {
    @Test("4-digit code matches the reference vectors", .timeLimit(.minutes(5)), arguments: [
        (Array("rawABCDE".utf8), "0392"),
        (Array("raw".utf8) + [0xD5, 0x01, 0xE4, 0x03, 0x81], "6251"),
        ([UInt8](), "0000"),
    ])
    func digits(input: [UInt8], expected: String) {
        #expect(VerificationCodes.digits(from: input) == expected)
    }

    @Test("4-digit code is always 4 decimal digits", .timeLimit(.minutes(5)))
    func digitsShape() {
        var generator = SeededGenerator(seed: 7)
        for _ in 0..<2_000 {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let code = VerificationCodes.digits(from: bytes)
            #expect(code.count == 4 && code.allSatisfy(\.isNumber))
        }
    }

    @Test("5-character token is the upper-cased start of URL-safe base64", .timeLimit(.minutes(5)))
    func token() {
        // 0xFB 0xFF 0xBF → "-_-_" in URL-safe base64; the next byte adds one more character.
        #expect(VerificationCodes.token(from: [0xFB, 0xFF, 0xBF, 0x00, 0x00, 0x00]) == "-_-_A")
        #expect(VerificationCodes.token(from: Array("hello world".utf8)) == "AGVSB")
    }
}
