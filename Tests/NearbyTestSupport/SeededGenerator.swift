/// A small deterministic generator (SplitMix64), so randomized tests are reproducible.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// Creates a generator; the same seed gives the same sequence.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
    }

    /// A random value in `0..<bound` (`bound` > 0).
    public mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    /// `source` with one random mutation: a bit flip, a truncation, an extension, or a replaced byte.
    public mutating func mutate(_ source: [UInt8]) -> [UInt8] {
        var bytes = source
        switch next() % 4 {
        case 0 where !bytes.isEmpty:
            bytes[below(bytes.count)] ^= UInt8(1 << (next() % 8))
        case 1:
            bytes = Array(bytes.prefix(below(bytes.count + 1)))
        case 2:
            bytes += self.bytes(below(20) + 1)
        default:
            if !bytes.isEmpty {
                bytes[below(bytes.count)] = UInt8(truncatingIfNeeded: next())
            }
        }
        return bytes
    }
}
