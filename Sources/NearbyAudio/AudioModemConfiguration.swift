import NearbyWire

/// The parameters both ends of the near-ultrasonic audio modem must agree on (docs/AUDIO-MODEM.md).
///
/// Every time constant is a whole number of samples derived from the sample rate, which must be a multiple of 300 Hz
/// (44 100 and 48 000 Hz are): the analysis window is 20 ms (`sampleRate / 50` samples, 50 Hz bins), the hop of the
/// receiver's sliding analysis is a sixth of it, and one symbol slot is ten hops (33⅓ ms): a one-hop raised-cosine
/// ramp, a six-hop flat tone, a one-hop ramp, and two hops of silence that let room echoes die away.
public struct AudioModemConfiguration: Sendable, Hashable {
    /// The lowest tone of the 16-tone alphabet, in hertz.
    public static let lowestToneFrequency = 18_500
    /// The distance between neighbouring tones, in hertz (two 50 Hz analysis bins).
    public static let toneSpacing = 100
    /// How many tones the alphabet has; one tone carries one 4-bit symbol.
    public static let toneCount = 16
    /// The shortest token the modem carries, in bytes.
    public static let minimumTokenLength = 1
    /// The longest token the modem carries, in bytes (the Reed–Solomon codewords over GF(16) hold at most 10 nibbles).
    public static let maximumTokenLength = 8

    /// Samples per second of the PCM the encoder produces and the decoder consumes.
    public let sampleRate: Int
    /// The token length in bytes, 1...8. Both ends must use the same length.
    public let tokenLength: Int
    /// The peak amplitude of the encoder's tones, in (0, 1].
    public let amplitude: Float

    /// Creates a configuration, checking it.
    ///
    /// - Throws: `NearbyError` `.invalidArgument` when the sample rate is not a multiple of 300 Hz between 42 000 and
    ///   192 000 Hz, the token length is outside 1...8, or the amplitude is outside (0, 1].
    public init(sampleRate: Int = 48_000, tokenLength: Int = 8, amplitude: Float = 0.5) throws {
        guard sampleRate % 300 == 0, (42_000...192_000).contains(sampleRate) else {
            throw NearbyError(
                .invalidArgument,
                "audio sample rate \(sampleRate) Hz is not a multiple of 300 Hz between 42000 and 192000 Hz")
        }
        guard (Self.minimumTokenLength...Self.maximumTokenLength).contains(tokenLength) else {
            throw NearbyError(.invalidArgument, "audio token length \(tokenLength) is outside 1...8 bytes")
        }
        guard amplitude > 0, amplitude <= 1 else {
            throw NearbyError(.invalidArgument, "audio amplitude \(amplitude) is outside (0, 1]")
        }
        self.sampleRate = sampleRate
        self.tokenLength = tokenLength
        self.amplitude = amplitude
    }

    /// The default configuration: 48 kHz, 8-byte tokens, amplitude 0.5.
    public static let standard = try! AudioModemConfiguration()

    /// Samples in one analysis window (20 ms): the flat part of a tone.
    public var windowLength: Int { sampleRate / 50 }
    /// Samples in one hop of the receiver's sliding analysis (a sixth of a window); also the length of each ramp.
    public var hopLength: Int { sampleRate / 300 }
    /// Samples in one symbol slot (ten hops, 33⅓ ms).
    public var slotLength: Int { hopLength * AudioFrameLayout.hopsPerSlot }
    /// Samples in one tone including its ramps (eight hops); the rest of the slot is silence.
    public var toneLength: Int { hopLength * 8 }
    /// Samples in one whole frame (preamble and data slots).
    public var frameLength: Int { slotLength * layout.slotCount }
    /// The slot structure of a frame for this token length.
    public var layout: AudioFrameLayout { AudioFrameLayout(tokenLength: tokenLength) }

    /// The frequency of tone `index` (0..<16) in hertz: 18 500 + 100 × index.
    public static func toneFrequency(_ index: Int) -> Int { lowestToneFrequency + toneSpacing * index }
}
