import Foundation

/// Synthetic room sound for audio tests.
public enum SyntheticSound {
    /// Synthetic speech (a gliding 110–150 Hz voice with moving formants, syllables at 4 Hz) plus white noise.
    public static func speechAndNoise(seconds: Double, sampleRate: Int, seed: UInt64) -> [Float] {
        var random = SeededGenerator(seed: seed)
        return (0..<Int(seconds * Double(sampleRate))).map { n in
            let t = Double(n) / Double(sampleRate)
            let pitch = 130 + 20 * sin(2 * Double.pi * 0.7 * t)
            let syllable = max(0, sin(2 * Double.pi * 4 * t))
            var voice = 0.0
            for harmonic in 1...20 {
                let f = pitch * Double(harmonic)
                let formant = exp(-pow((f - 700 - 300 * sin(2 * Double.pi * 2 * t)) / 400, 2))
                    + 0.5 * exp(-pow((f - 1_800) / 500, 2))
                voice += formant * sin(2 * Double.pi * f * t)
            }
            let noise = 0.1 * Double(gaussian(&random))
            return Float(0.15 * syllable * voice + noise)
        }
    }

    /// A standard normal sample.
    public static func gaussian(_ random: inout SeededGenerator) -> Float {
        let u1 = max(Double(random.next() >> 11) * 0x1p-53, 1e-300)
        let u2 = Double(random.next() >> 11) * 0x1p-53
        return Float(sqrt(-2 * log(u1)) * cos(2 * Double.pi * u2))
    }
}
