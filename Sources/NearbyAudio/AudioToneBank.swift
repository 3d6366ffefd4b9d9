#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Cosine and sine tables of the 16 tones over one common period of `sampleRate / 100` samples (every tone is a
/// whole multiple of 100 Hz), so a correlation indexed by the absolute sample number modulo the period has a phase
/// that does not depend on where a block starts, and block sums can be added into window sums.
struct AudioToneBank: Sendable {
    /// Samples in the common period of all tones.
    let period: Int
    /// `cosines[tone * period + n]` = cos(2π f_tone n / sampleRate).
    let cosines: [Float]
    /// `sines[tone * period + n]` = sin(2π f_tone n / sampleRate).
    let sines: [Float]

    init(configuration: AudioModemConfiguration) {
        let period = configuration.sampleRate / 100
        var cosines = [Float](repeating: 0, count: AudioModemConfiguration.toneCount * period)
        var sines = cosines
        for tone in 0..<AudioModemConfiguration.toneCount {
            let step = 2 * Double.pi * Double(AudioModemConfiguration.toneFrequency(tone))
                / Double(configuration.sampleRate)
            for n in 0..<period {
                cosines[tone * period + n] = Float(cos(step * Double(n)))
                sines[tone * period + n] = Float(sin(step * Double(n)))
            }
        }
        self.period = period
        self.cosines = cosines
        self.sines = sines
    }

    /// The energy of each tone in `samples[start..<start + length]` (rectangular window).
    func energies(of samples: [Float], start: Int, length: Int) -> [Float] {
        (0..<AudioModemConfiguration.toneCount).map { tone in
            var re: Float = 0
            var im: Float = 0
            for n in 0..<length {
                let index = start + n
                let x: Float = index >= 0 && index < samples.count ? samples[index] : 0
                let phase = tone * period + n % period
                re += x * cosines[phase]
                im += x * sines[phase]
            }
            return re * re + im * im
        }
    }
}
