import NearbyWire
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns a token into the PCM of one audio frame (docs/AUDIO-MODEM.md).
///
/// Each slot's tone rises and falls with a raised-cosine ramp one hop long (3⅓ ms), so the frame starts, ends and
/// changes tone without the clicks that abrupt switching of near-ultrasonic tones makes audible. A broadcaster plays
/// ``samples(for:)`` in a loop, optionally with silence between frames.
public struct AudioTokenEncoder: Sendable {
    /// The modem parameters.
    public let configuration: AudioModemConfiguration

    /// Creates an encoder.
    public init(configuration: AudioModemConfiguration = .standard) {
        self.configuration = configuration
    }

    /// The tone index (0..<16) of every slot of the frame carrying `token`: the 8 preamble tones, then the data.
    ///
    /// - Throws: `NearbyError` `.invalidArgument` when `token` is not `configuration.tokenLength` bytes long.
    public func toneSequence(for token: [UInt8]) throws -> [Int] {
        try AudioFrameCoding.tones(for: token, layout: configuration.layout)
    }

    /// The mono Float PCM (peak ``AudioModemConfiguration/amplitude``) of one frame carrying `token`,
    /// ``AudioModemConfiguration/frameLength`` samples long.
    ///
    /// - Throws: `NearbyError` `.invalidArgument` when `token` is not `configuration.tokenLength` bytes long.
    public func samples(for token: [UInt8]) throws -> [Float] {
        let tones = try toneSequence(for: token)
        let config = configuration
        let envelope = Self.envelope(configuration: config)
        var pcm = [Float](repeating: 0, count: config.frameLength)
        for (slot, tone) in tones.enumerated() {
            let start = slot * config.slotLength
            let step = 2 * Double.pi * Double(AudioModemConfiguration.toneFrequency(tone)) / Double(config.sampleRate)
            for n in 0..<envelope.count {
                pcm[start + n] = envelope[n] * Float(sin(step * Double(n)))
            }
        }
        return pcm
    }

    /// The tone envelope: a raised-cosine ramp up over one hop, flat for a window, a ramp down over one hop.
    static func envelope(configuration config: AudioModemConfiguration) -> [Float] {
        let ramp = config.hopLength
        return (0..<config.toneLength).map { n in
            let fromEdge = min(n, config.toneLength - 1 - n)
            guard fromEdge < ramp else { return config.amplitude }
            let rise = 0.5 * (1 - cos(Double.pi * (Double(fromEdge) + 0.5) / Double(ramp)))
            return config.amplitude * Float(rise)
        }
    }
}
