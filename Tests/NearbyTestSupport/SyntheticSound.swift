import Foundation
import NearbyCore
import NearbyPulseAudio

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

/// Synthetic speech and noise played in a loop into a sink, on a thread of its own, until stopped.
public final class BackgroundSound: Sendable {
    private let stopped = LockedValue(false)
    private let done = DispatchSemaphore(value: 0)

    /// Starts playing into `sink` of `server`.
    public init(server: String, sink: String) {
        let sound = SyntheticSound.speechAndNoise(seconds: 2, sampleRate: 48_000, seed: 0xA1_0005)
        let stopped = self.stopped
        let done = self.done
        Thread.detachNewThread {
            defer { done.signal() }
            guard let player = try? PulseAudioPlayer(
                server: server, sink: sink, streamName: "background", bufferSamples: 9_600)
            else { return }
            while !stopped.withLock({ $0 }) {
                for start in stride(from: 0, to: sound.count, by: 4_800) where !stopped.withLock({ $0 }) {
                    try? player.play(Array(sound[start..<min(start + 4_800, sound.count)]))
                }
            }
        }
    }

    /// Stops playing and waits for the player's thread to end (once; later calls return at once).
    public func stop() {
        guard stopped.withLock({ wasStopped in defer { wasStopped = true }; return !wasStopped }) else { return }
        done.wait()
    }
}
