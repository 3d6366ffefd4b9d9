import NearbyTestSupport
import NearbyWire
import Testing

@Suite("EndpointID", .timeLimit(.minutes(5)))
struct EndpointIDTests {
    @Test("alphabet is A–Z, then 1–9, then 0")
    func alphabet() {
        #expect(EndpointID.alphabet == "ABCDEFGHIJKLMNOPQRSTUVWXYZ1234567890")
        #expect(EndpointID.alphabet.count == 36)
        #expect(EndpointID.length == 4)
    }

    @Test("random IDs use only the alphabet and are reproducible with a seeded generator")
    func randomUsesAlphabet() {
        var first = SeededGenerator(seed: 42)
        var second = SeededGenerator(seed: 42)
        for _ in 0..<1000 {
            let id = EndpointID.random(using: &first)
            #expect(id.value.count == 4)
            #expect(id.value.allSatisfy { EndpointID.alphabet.contains($0) })
            #expect(id == EndpointID.random(using: &second))
        }
        let system = EndpointID.random()
        #expect(system.value.allSatisfy { EndpointID.alphabet.contains($0) })
    }

    @Test("random characters are roughly uniform over all 36")
    func randomIsUniform() {
        var generator = SeededGenerator(seed: 7)
        var counts: [Character: Int] = [:]
        let ids = 9000
        for _ in 0..<ids {
            for character in EndpointID.random(using: &generator).value {
                counts[character, default: 0] += 1
            }
        }
        #expect(counts.count == 36)
        let expected = ids * 4 / 36  // 1000
        for (character, count) in counts {
            #expect((expected * 8 / 10...expected * 12 / 10).contains(count), "\(character): \(count)")
        }
    }

    @Test("accepts any four printable ASCII characters")
    func acceptsPrintableASCII() throws {
        #expect(try EndpointID("ABCD").value == "ABCD")
        #expect(try EndpointID("a b~").value == "a b~")
        #expect(try EndpointID("0000").asciiBytes == [0x30, 0x30, 0x30, 0x30])
        #expect(try EndpointID(asciiBytes: [0x41, 0x42, 0x43, 0x44]) == EndpointID("ABCD"))
        #expect(try EndpointID("WXYZ").description == "WXYZ")
        #expect(try EndpointID("AAAA") < EndpointID("AAAB"))
    }

    @Test("rejects wrong lengths, control characters and non-ASCII", arguments: [
        "", "ABC", "ABCDE", "AB\nD", "AB\u{7F}D", "\u{0}ABC", "ÄBC", "AB\u{E9}",
    ])
    func rejectsInvalid(_ value: String) {
        expectNearbyError(.invalidArgument) { _ = try EndpointID(value) }
    }

    @Test("rejects non-printable bytes")
    func rejectsBytes() {
        expectNearbyError(.invalidArgument) { _ = try EndpointID(asciiBytes: [0x41, 0x42, 0x43, 0x80]) }
        expectNearbyError(.invalidArgument) { _ = try EndpointID(asciiBytes: [0x41, 0x42, 0x43]) }
        expectNearbyError(.invalidArgument) { _ = try EndpointID(asciiBytes: [0x1F, 0x42, 0x43, 0x44]) }
    }
}
