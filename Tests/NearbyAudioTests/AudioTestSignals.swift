import NearbyAudio
import NearbyTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Synthetic channel impairments for the modem tests: noise, echo, clock drift, gain, all seeded.
enum AudioTestSignals {
    /// A standard normal sample (Box–Muller).
    static func gaussian(_ random: inout SeededGenerator) -> Float {
        let u1 = max(Double(random.next() >> 11) * 0x1p-53, 1e-300)
        let u2 = Double(random.next() >> 11) * 0x1p-53
        return Float(sqrt(-2 * log(u1)) * cos(2 * Double.pi * u2))
    }

    /// `signal` plus white Gaussian noise whose power is `snr` dB below the power of a tone of `amplitude`
    /// (amplitude²/2) over the whole band 0…sampleRate/2.
    static func addingNoise(
        to signal: [Float], snr: Double, amplitude: Float, random: inout SeededGenerator
    ) -> [Float] {
        let signalPower = Double(amplitude * amplitude) / 2
        let sigma = Float(sqrt(signalPower / pow(10, snr / 10)))
        return signal.map { $0 + sigma * gaussian(&random) }
    }

    /// `signal` plus delayed, attenuated copies of itself: `echoes` are (delay in samples, gain).
    static func addingEchoes(to signal: [Float], _ echoes: [(delay: Int, gain: Float)]) -> [Float] {
        let longest = echoes.map(\.delay).max() ?? 0
        var out = signal + [Float](repeating: 0, count: longest)
        for (delay, gain) in echoes {
            for (n, x) in signal.enumerated() { out[n + delay] += gain * x }
        }
        return out
    }

    /// `signal` as heard by a receiver whose sample clock differs by `ppm` parts per million (positive: the
    /// receiver samples faster, so the signal gets longer), by windowed-sinc interpolation (±16 taps, Hann).
    static func resampled(_ signal: [Float], ppm: Double) -> [Float] {
        let ratio = 1 / (1 + ppm * 1e-6)
        let count = Int(Double(signal.count) / ratio)
        let halfWidth = 16
        return (0..<count).map { m in
            let position = Double(m) * ratio
            let center = Int(position.rounded(.down))
            var sum = 0.0
            for k in (center - halfWidth + 1)...(center + halfWidth) where k >= 0 && k < signal.count {
                let t = position - Double(k)
                let sinc = t == 0 ? 1 : sin(Double.pi * t) / (Double.pi * t)
                let window = 0.5 * (1 + cos(Double.pi * t / Double(halfWidth)))
                sum += Double(signal[k]) * sinc * window
            }
            return Float(sum)
        }
    }

    /// `count` samples of silence.
    static func silence(_ count: Int) -> [Float] { [Float](repeating: 0, count: count) }

    /// Every decoded token of `signal`, fed to a fresh decoder in chunks whose sizes `chunkSizes` yields in turn.
    static func decode(
        _ signal: [Float], configuration: AudioModemConfiguration = .standard,
        chunkSizes: () -> Int = { 4096 }
    ) -> [DecodedAudioToken] {
        var decoder = AudioTokenDecoder(configuration: configuration)
        var found: [DecodedAudioToken] = []
        var offset = 0
        while offset < signal.count {
            let end = min(signal.count, offset + max(1, chunkSizes()))
            found += decoder.consume(signal[offset..<end])
            offset = end
        }
        return found
    }
}
