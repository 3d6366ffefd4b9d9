/// A token the ``AudioTokenDecoder`` heard.
public struct DecodedAudioToken: Sendable, Hashable {
    /// The token's bytes (CRC-checked).
    public var token: [UInt8]
    /// The index, counted from the first sample the decoder consumed, of the sample where the frame began (to
    /// within one hop, 3⅓ ms).
    public var startSample: Int
    /// How well the preamble matched: the mean share of each preamble window's energy in its expected tone,
    /// 1 for a clean signal, about 1/16 for noise.
    public var syncScore: Float
    /// How many of the frame's symbols the error correction changed.
    public var correctedSymbols: Int

    /// Creates a decoded token.
    public init(token: [UInt8], startSample: Int, syncScore: Float, correctedSymbols: Int) {
        self.token = token
        self.startSample = startSample
        self.syncScore = syncScore
        self.correctedSymbols = correctedSymbols
    }
}
