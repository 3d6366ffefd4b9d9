/// A small, self-contained SHA-256 (FIPS 180-4).
///
/// The wire layer needs SHA-256 only to derive short identifiers (service-ID hashes, BLE device tokens,
/// advertisement hashes), so it carries its own implementation instead of depending on a crypto library.
/// It is not constant-time and is not meant for secrets; the security layer uses swift-crypto.
///
/// Hash in one call with ``hash(_:)``, or feed data in pieces with ``update(_:)`` and finish with
/// ``finalize()``:
///
/// ```swift
/// let digest = SHA256Digest.hash(Array("abc".utf8))   // 32 bytes, ba7816bf…
/// ```
package struct SHA256Digest: Sendable {
    /// The length of a SHA-256 digest in bytes.
    package static let byteCount = 32

    /// The length of one SHA-256 message block in bytes.
    package static let blockByteCount = 64

    private var state: [UInt32] = SHA256Digest.initialState
    private var pending: [UInt8] = []
    private var messageLength: UInt64 = 0

    /// Creates a hasher with nothing fed to it yet.
    package init() {
        pending.reserveCapacity(Self.blockByteCount)
    }

    /// Returns the SHA-256 digest (32 bytes) of `bytes`.
    package static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256Digest()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Returns the SHA-256 digest (32 bytes) of the UTF-8 encoding of `string`.
    package static func hash(utf8 string: String) -> [UInt8] {
        hash(Array(string.utf8))
    }

    /// Feeds more message bytes to the hasher.
    package mutating func update(_ bytes: some Sequence<UInt8>) {
        for byte in bytes {
            pending.append(byte)
            messageLength &+= 1
            if pending.count == Self.blockByteCount {
                compressPendingBlock()
            }
        }
    }

    /// Pads the message, processes the last blocks and returns the 32-byte digest.
    ///
    /// The hasher is consumed: call this once, on a copy if you need to continue.
    package consuming func finalize() -> [UInt8] {
        let bitLength = messageLength &* 8
        pending.append(0x80)
        if pending.count > Self.blockByteCount - 8 {
            while pending.count < Self.blockByteCount { pending.append(0) }
            compressPendingBlock()
        }
        while pending.count < Self.blockByteCount - 8 { pending.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            pending.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        compressPendingBlock()

        var digest: [UInt8] = []
        digest.reserveCapacity(Self.byteCount)
        for word in state {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    private mutating func compressPendingBlock() {
        precondition(pending.count == Self.blockByteCount)
        var w = [UInt32](repeating: 0, count: 64)
        for t in 0..<16 {
            w[t] = UInt32(pending[4 * t]) << 24 | UInt32(pending[4 * t + 1]) << 16
                | UInt32(pending[4 * t + 2]) << 8 | UInt32(pending[4 * t + 3])
        }
        for t in 16..<64 {
            let s0 = Self.rotateRight(w[t - 15], 7) ^ Self.rotateRight(w[t - 15], 18) ^ (w[t - 15] >> 3)
            let s1 = Self.rotateRight(w[t - 2], 17) ^ Self.rotateRight(w[t - 2], 19) ^ (w[t - 2] >> 10)
            w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
        }

        var a = state[0], b = state[1], c = state[2], d = state[3]
        var e = state[4], f = state[5], g = state[6], h = state[7]
        for t in 0..<64 {
            let bigSigma1 = Self.rotateRight(e, 6) ^ Self.rotateRight(e, 11) ^ Self.rotateRight(e, 25)
            let choose = (e & f) ^ (~e & g)
            let t1 = h &+ bigSigma1 &+ choose &+ Self.roundConstants[t] &+ w[t]
            let bigSigma0 = Self.rotateRight(a, 2) ^ Self.rotateRight(a, 13) ^ Self.rotateRight(a, 22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let t2 = bigSigma0 &+ majority
            h = g
            g = f
            f = e
            e = d &+ t1
            d = c
            c = b
            b = a
            a = t1 &+ t2
        }
        state[0] &+= a
        state[1] &+= b
        state[2] &+= c
        state[3] &+= d
        state[4] &+= e
        state[5] &+= f
        state[6] &+= g
        state[7] &+= h
        pending.removeAll(keepingCapacity: true)
    }

    @inline(__always)
    private static func rotateRight(_ value: UInt32, _ count: UInt32) -> UInt32 {
        (value >> count) | (value << (32 - count))
    }

    /// H(0): the first 32 bits of the fractional parts of the square roots of the first 8 primes.
    private static let initialState: [UInt32] = [
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19,
    ]

    /// K: the first 32 bits of the fractional parts of the cube roots of the first 64 primes.
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}
