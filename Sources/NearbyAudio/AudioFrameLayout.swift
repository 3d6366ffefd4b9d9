/// How a frame is divided into symbol slots: an 8-slot Costas preamble, then two interleaved Reed–Solomon codewords.
public struct AudioFrameLayout: Sendable, Hashable {
    /// Analysis hops per symbol slot.
    static let hopsPerSlot = 10
    /// Parity symbols per Reed–Solomon codeword (corrects two symbol errors, detects a third).
    public static let paritySymbols = 5
    /// The Welch–Costas sequence of order 16: 3^i mod 17 − 1 for i = 0..<16.
    static let welchCostas: [Int] = [0, 2, 8, 9, 12, 4, 14, 10, 15, 13, 7, 6, 3, 11, 1, 5]
    /// The preamble's tone indices: the first eight elements of `welchCostas`.
    public static let preambleTones: [Int] = Array(welchCostas.prefix(8))

    /// The token length in bytes.
    public let tokenLength: Int

    /// Data nibbles (token and CRC-16) per codeword: `tokenLength + 2`.
    public var dataSymbolsPerCodeword: Int { tokenLength + 2 }
    /// Symbols per (shortened) codeword: data plus five parity symbols.
    public var codewordLength: Int { dataSymbolsPerCodeword + Self.paritySymbols }
    /// Slots of the preamble.
    public var preambleSlotCount: Int { Self.preambleTones.count }
    /// Slots that carry data symbols (both codewords).
    public var dataSlotCount: Int { 2 * codewordLength }
    /// All slots of a frame.
    public var slotCount: Int { preambleSlotCount + dataSlotCount }

    /// The whitening offset added (mod 16) to the symbol of data slot `slot`: the Welch–Costas sequence continued
    /// past the preamble, `welchCostas[(slot + 8) mod 16]`, so that regular tokens do not make regular tone patterns.
    public static func whitening(slot: Int) -> Int { welchCostas[(slot + 8) & 15] }
}
