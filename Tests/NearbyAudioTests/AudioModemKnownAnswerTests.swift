import NearbyTestSupport
import NearbyWire
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@testable import NearbyAudio

@Suite("Audio modem known answers", .timeLimit(.minutes(5)))
struct AudioModemKnownAnswerTests {
    @Test("CRC-16/CCITT-FALSE check value and token vectors")
    func crcVectors() {
        #expect(AudioCRC16.checksum(Array("123456789".utf8)) == 0x29B1)
        #expect(AudioCRC16.checksum([]) == 0xFFFF)
        #expect(AudioCRC16.checksum([0x00]) == 0xE1F0)
        #expect(AudioCRC16.checksum([0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]) == CRCVector.token)
    }

    @Test("GF(16) tables and the Reed–Solomon generator polynomial")
    func generatorPolynomial() {
        #expect(GF16ReedSolomon.exp.prefix(15) == [1, 2, 4, 8, 3, 6, 12, 11, 5, 10, 7, 14, 15, 13, 9])
        // (x+α)(x+α²)(x+α³)(x+α⁴)(x+α⁵) over GF(16) with x⁴+x+1.
        #expect(GF16ReedSolomon.generator == GeneratorVector.coefficients)
    }

    @Test("Reed–Solomon codewords have zero syndromes and correct up to two symbol errors")
    func reedSolomonCorrects() throws {
        var random = SeededGenerator(seed: 0x5EED_0001)
        for length in 1...10 {
            let data = (0..<length).map { _ in UInt8(random.below(16)) }
            let codeword = GF16ReedSolomon.encode(data)
            #expect(codeword.prefix(length).elementsEqual(data))
            #expect(GF16ReedSolomon.syndromes(codeword).allSatisfy { $0 == 0 })
            for errors in 1...2 {
                var word = codeword
                var positions = Set<Int>()
                while positions.count < errors { positions.insert(random.below(codeword.count)) }
                for position in positions { word[position] ^= UInt8(1 + random.below(15)) }
                let decoded = try #require(GF16ReedSolomon.decode(word))
                #expect(decoded.codeword == codeword)
                #expect(decoded.corrections == errors)
            }
        }
    }

    @Test("Three symbol errors are never silently accepted as the sent codeword")
    func reedSolomonRefusesThreeErrors() {
        var random = SeededGenerator(seed: 0x5EED_0002)
        let data = (0..<10).map { _ in UInt8(random.below(16)) }
        let codeword = GF16ReedSolomon.encode(data)
        for _ in 0..<200 {
            var word = codeword
            var positions = Set<Int>()
            while positions.count < 3 { positions.insert(random.below(15)) }
            for position in positions { word[position] ^= UInt8(1 + random.below(15)) }
            #expect(GF16ReedSolomon.decode(word)?.codeword != codeword)
        }
    }

    @Test("Token to tone sequence (8-byte token, 48 kHz)")
    func toneSequenceKnownAnswer() throws {
        let encoder = AudioTokenEncoder()
        let token: [UInt8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF]
        let symbols = try AudioFrameCoding.dataSymbols(for: token, layout: encoder.configuration.layout)
        // The first 20 data slots are the nibbles of token ‖ CRC (0x986B), alternating between the two codewords.
        let crc = CRCVector.token
        let nibbles = (token + [UInt8(crc >> 8), UInt8(crc & 0xFF)]).flatMap { [$0 >> 4, $0 & 0x0F] }
        #expect(Array(symbols.prefix(20)) == nibbles)
        #expect(symbols == ToneVector.dataSymbols)
        let tones = try encoder.toneSequence(for: token)
        #expect(tones.count == 38)
        #expect(Array(tones.prefix(8)) == [0, 2, 8, 9, 12, 4, 14, 10])
        #expect(tones == ToneVector.tones)
    }

    @Test("Encoder PCM: length, peak, and silent, click-free edges")
    func encoderPCM() throws {
        for rate in [44_100, 48_000] {
            let configuration = try AudioModemConfiguration(sampleRate: rate, tokenLength: 6, amplitude: 0.8)
            let pcm = try AudioTokenEncoder(configuration: configuration).samples(for: [1, 2, 3, 4, 5, 6])
            #expect(pcm.count == configuration.frameLength)
            #expect(pcm.count == 34 * rate / 30)
            #expect(pcm.map(abs).max()! <= 0.8)
            #expect(pcm.map(abs).max()! > 0.79)
            #expect(abs(pcm[0]) < 0.01)
            #expect(pcm.suffix(configuration.slotLength - configuration.toneLength).allSatisfy { $0 == 0 })
            // The largest sample-to-sample step is that of the 20 kHz tone itself, never a jump between tones.
            let steps = zip(pcm, pcm.dropFirst()).map { abs($1 - $0) }
            let toneStep = 2 * 0.8 * Float(sin(Double.pi * 20_000 / Double(rate)))
            #expect(steps.max()! <= toneStep + 1e-3)
        }
    }

    @Test("Bad configurations and tokens are NearbyError.invalidArgument")
    func badArguments() throws {
        for (rate, length, amplitude) in [(8_000, 8, Float(0.5)), (44_000, 8, 0.5), (48_000, 0, 0.5), (48_000, 9, 0.5),
            (48_000, 8, 0), (48_000, 8, 1.5)]
        {
            let error = #expect(throws: NearbyError.self) {
                try AudioModemConfiguration(sampleRate: rate, tokenLength: length, amplitude: amplitude)
            }
            #expect(error?.code == .invalidArgument)
        }
        let error = #expect(throws: NearbyError.self) { try AudioTokenEncoder().samples(for: [1, 2, 3]) }
        #expect(error?.code == .invalidArgument)
    }
}

/// Known answers from an independent reference (a 40-line Python model of docs/AUDIO-MODEM.md), frozen here; the
/// same example is worked through in the document.
enum CRCVector {
    static let token: UInt16 = 0x986B
}

enum GeneratorVector {
    static let coefficients: [UInt8] = [1, 11, 4, 6, 2, 1]
}

enum ToneVector {
    static let dataSymbols: [UInt8] = [
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 9, 8, 6, 11, 14, 2, 13, 9, 11, 4, 6, 12, 2, 15,
    ]
    static let tones: [Int] = [
        0, 2, 8, 9, 12, 4, 14, 10, 15, 14, 9, 9, 7, 0, 7, 12, 8, 11, 2, 4, 8, 1, 12, 9, 8, 5, 13, 1, 1, 13, 14, 14, 11,
        6, 14, 5, 14, 3,
    ]
}
