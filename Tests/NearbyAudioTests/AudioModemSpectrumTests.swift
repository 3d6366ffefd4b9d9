import NearbyAudio
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The encoder's output stays in its band: the ramps keep tone changes and frame edges from splattering energy into
/// the audible range (which is what an audible click is).
@Suite("Audio modem spectrum", .timeLimit(.minutes(5)))
struct AudioModemSpectrumTests {
    /// Power of `pcm` at `frequency` (Hann window over the whole signal).
    static func power(_ pcm: [Float], at frequency: Double, sampleRate: Int) -> Double {
        var re = 0.0
        var im = 0.0
        let count = Double(pcm.count)
        for (n, sample) in pcm.enumerated() {
            let x = Double(sample) * (0.5 - 0.5 * cos(2 * Double.pi * Double(n) / count))
            let phase = 2 * Double.pi * frequency * Double(n) / Double(sampleRate)
            re += x * cos(phase)
            im += x * sin(phase)
        }
        return re * re + im * im
    }

    @Test("Below 17 kHz the frame is at least 80 dB under its tones, below 18 kHz at least 50 dB", arguments: [44_100, 48_000])
    func outOfBandEnergy(sampleRate: Int) throws {
        let configuration = try AudioModemConfiguration(sampleRate: sampleRate)
        let pcm = try AudioTokenEncoder(configuration: configuration).samples(for: [1, 2, 3, 4, 5, 6, 7, 8])
        let peak = (0..<16).map { Self.power(pcm, at: Double(AudioModemConfiguration.toneFrequency($0)), sampleRate: sampleRate) }
            .max()!
        for frequency in [200.0, 1_000, 4_000, 10_000, 15_000, 17_000] {
            let level = 10 * log10(Self.power(pcm, at: frequency, sampleRate: sampleRate) / peak)
            #expect(level < -80, "\(frequency) Hz at \(level) dB")
        }
        let edge = 10 * log10(Self.power(pcm, at: 18_000, sampleRate: sampleRate) / peak)
        #expect(edge < -50, "18 kHz at \(edge) dB")
    }
}
