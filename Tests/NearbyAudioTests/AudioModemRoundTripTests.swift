import NearbyAudio
import NearbyTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Round trips through the streaming decoder on synthetic signals: noise, echo, clock drift, gain, chunking.
@Suite("Audio modem round trips", .timeLimit(.minutes(5)))
struct AudioModemRoundTripTests {
    /// `frames` frames of `tokens`, each after a stretch of silence of random length, then a short tail.
    static func transmission(
        _ tokens: [[UInt8]], configuration: AudioModemConfiguration = .standard, random: inout SeededGenerator
    ) throws -> (signal: [Float], starts: [Int]) {
        let encoder = AudioTokenEncoder(configuration: configuration)
        var signal: [Float] = []
        var starts: [Int] = []
        for token in tokens {
            signal += AudioTestSignals.silence(configuration.sampleRate / 10 + random.below(configuration.sampleRate / 3))
            starts.append(signal.count)
            signal += try encoder.samples(for: token)
        }
        signal += AudioTestSignals.silence(configuration.sampleRate / 10)
        return (signal, starts)
    }

    @Test("Clean round trip at 44.1 and 48 kHz, token lengths 6 and 8, frame start found to within a hop")
    func cleanRoundTrip() throws {
        var random = SeededGenerator(seed: 0xA0D1_0001)
        for rate in [44_100, 48_000] {
            for length in [6, 8] {
                let configuration = try AudioModemConfiguration(sampleRate: rate, tokenLength: length)
                let tokens = [random.bytes(length), random.bytes(length)]
                let (signal, starts) = try Self.transmission(tokens, configuration: configuration, random: &random)
                let found = AudioTestSignals.decode(signal, configuration: configuration)
                #expect(found.map(\.token) == tokens)
                for (detection, start) in zip(found, starts) {
                    #expect(abs(detection.startSample - start) <= configuration.hopLength)
                    #expect(detection.correctedSymbols == 0)
                    #expect(detection.syncScore > 0.9)
                }
            }
        }
    }

    @Test("White noise at -6, -12 and -15 dB SNR (full band): every token decoded", arguments: [-6.0, -12.0, -15.0])
    func noisyRoundTrip(snr: Double) throws {
        var random = SeededGenerator(seed: 0xA0D1_0002 &+ UInt64(-snr))
        let tokens = (0..<3).map { _ in random.bytes(8) }
        let (clean, _) = try Self.transmission(tokens, random: &random)
        let noisy = AudioTestSignals.addingNoise(to: clean, snr: snr, amplitude: 0.5, random: &random)
        #expect(AudioTestSignals.decode(noisy).map(\.token) == tokens)
    }

    @Test("Echoes (5 ms at -3 dB, 14 ms at -6 dB, 45 ms at -10 dB) plus noise at -10 dB")
    func echoRoundTrip() throws {
        var random = SeededGenerator(seed: 0xA0D1_0003)
        let tokens = (0..<3).map { _ in random.bytes(8) }
        let (clean, _) = try Self.transmission(tokens, random: &random)
        let echoed = AudioTestSignals.addingEchoes(to: clean, [(240, 0.71), (672, 0.5), (2160, 0.32)])
        let noisy = AudioTestSignals.addingNoise(to: echoed, snr: -10, amplitude: 0.5, random: &random)
        #expect(AudioTestSignals.decode(noisy).map(\.token) == tokens)
    }

    @Test("Sample-clock drift of ±100 ppm (and ±1000 ppm) with noise at -10 dB", arguments: [-1000.0, -100.0, 100.0, 1000.0])
    func driftRoundTrip(ppm: Double) throws {
        var random = SeededGenerator(seed: 0xA0D1_0004 &+ UInt64(ppm + 2000))
        let tokens = (0..<2).map { _ in random.bytes(8) }
        let (clean, _) = try Self.transmission(tokens, random: &random)
        let drifted = AudioTestSignals.resampled(clean, ppm: ppm)
        let noisy = AudioTestSignals.addingNoise(to: drifted, snr: -10, amplitude: 0.5, random: &random)
        #expect(AudioTestSignals.decode(noisy).map(\.token) == tokens)
    }

    @Test("Level changes: -50 dB overall, a 30 dB fade across a frame, a +18 dB step mid-frame")
    func gainRoundTrip() throws {
        var random = SeededGenerator(seed: 0xA0D1_0005)
        let tokens = (0..<3).map { _ in random.bytes(8) }
        let (clean, starts) = try Self.transmission(tokens, random: &random)
        let frame = AudioModemConfiguration.standard.frameLength
        var signal = clean.map { $0 * 0.003 }  // about -50 dB
        for n in 0..<frame {  // fade from 1 to 0.03 over the second frame
            signal[starts[1] + n] = clean[starts[1] + n] * Float(pow(0.03, Double(n) / Double(frame)))
        }
        for n in (starts[2] + frame / 2)..<(starts[2] + frame) { signal[n] = clean[n] * 8 }
        var noise = SeededGenerator(seed: 0xA0D1_0006)
        let noisy = signal.map { $0 + 1e-5 * AudioTestSignals.gaussian(&noise) }
        #expect(AudioTestSignals.decode(noisy).map(\.token) == tokens)
    }

    @Test("Loud audible interference (speech-band tones 40 dB above the signal) does not disturb decoding")
    func audibleInterference() throws {
        var random = SeededGenerator(seed: 0xA0D1_0007)
        let tokens = (0..<2).map { _ in random.bytes(8) }
        let (clean, _) = try Self.transmission(tokens, random: &random)
        let rate = Double(AudioModemConfiguration.standard.sampleRate)
        let loud = clean.enumerated().map { n, x -> Float in
            let t = Double(n) / rate
            let low: Double = 0.9 * sin(2 * Double.pi * 220 * t)
            let mid: Double = 0.5 * sin(2 * Double.pi * 1_700 * t + 1)
            let glide: Double = 0.3 * sin(2 * Double.pi * 3_100 * t * (1 + 0.1 * sin(3 * t)))
            return x * 0.02 + Float(low + mid + glide)
        }
        #expect(AudioTestSignals.decode(loud).map(\.token) == tokens)
    }

    @Test("Arbitrary chunk sizes (1 to 5000 samples) give the same tokens at the same positions as one chunk")
    func chunking() throws {
        var random = SeededGenerator(seed: 0xA0D1_0008)
        let tokens = (0..<3).map { _ in random.bytes(8) }
        let (clean, _) = try Self.transmission(tokens, random: &random)
        let noisy = AudioTestSignals.addingNoise(to: clean, snr: -8, amplitude: 0.5, random: &random)
        let whole = AudioTestSignals.decode(noisy, chunkSizes: { noisy.count })
        var sizes = SeededGenerator(seed: 0xA0D1_0009)
        let pieces = AudioTestSignals.decode(noisy, chunkSizes: { [1, 7, 160, 1_000, 5_000][sizes.below(5)] })
        #expect(whole.map(\.token) == tokens)
        #expect(pieces.map(\.token) == whole.map(\.token))
        #expect(pieces.map(\.startSample) == whole.map(\.startSample))
        var decoder = AudioTokenDecoder()
        _ = decoder.consume(noisy.prefix(12_345))
        #expect(decoder.samplesConsumed == 12_345)
    }

    @Test("A looping broadcaster is heard once per frame, back to back")
    func loopedFrames() throws {
        let token: [UInt8] = [9, 8, 7, 6, 5, 4, 3, 2]
        let frame = try AudioTokenEncoder().samples(for: token)
        let signal = AudioTestSignals.silence(1_000) + frame + frame + frame + AudioTestSignals.silence(4_000)
        let found = AudioTestSignals.decode(signal)
        #expect(found.map(\.token) == [token, token, token])
        for (k, detection) in found.enumerated() {
            #expect(abs(detection.startSample - 1_000 - k * frame.count) <= AudioModemConfiguration.standard.hopLength)
        }
    }

    @Test("Noise alone (20 s at several levels) yields no token")
    func noFalseTokens() {
        var random = SeededGenerator(seed: 0xA0D1_000A)
        var decoder = AudioTokenDecoder()
        var found: [DecodedAudioToken] = []
        for level in [Float(1e-4), 0.01, 0.3, 1] {
            let noise = (0..<(5 * 48_000)).map { _ in level * AudioTestSignals.gaussian(&random) }
            found += decoder.consume(noise)
        }
        #expect(found.isEmpty)
    }
}
