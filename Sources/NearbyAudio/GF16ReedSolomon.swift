/// Reed–Solomon codes over GF(16) (primitive polynomial x⁴ + x + 1, α = 2) with five parity symbols, generator
/// g(x) = (x − α)(x − α²)(x − α³)(x − α⁴)(x − α⁵), systematic, shortened to `n` ≤ 15 symbols.
///
/// A codeword `c[0..<n]` is the polynomial c(x) = Σ c[i]·x^(n−1−i): the first symbol has the highest degree, the
/// data symbols come first and the five parity symbols last. The decoder corrects up to two symbol errors
/// (Berlekamp–Massey, Chien search, Forney) and reports failure rather than guessing beyond that.
enum GF16ReedSolomon {
    static let parityCount = AudioFrameLayout.paritySymbols

    /// α^i for i in 0..<30 (doubled so products need no modulo).
    static let exp: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 30)
        var value: UInt8 = 1
        for i in 0..<15 {
            table[i] = value
            table[i + 15] = value
            value <<= 1
            if value & 0x10 != 0 { value ^= 0x13 }
        }
        return table
    }()

    /// log_α(v) for v in 1..<16 (index 0 unused).
    static let log: [Int] = {
        var table = [Int](repeating: 0, count: 16)
        for i in 0..<15 { table[Int(exp[i])] = i }
        return table
    }()

    static func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
        a == 0 || b == 0 ? 0 : exp[log[Int(a)] + log[Int(b)]]
    }

    static func divide(_ a: UInt8, _ b: UInt8) -> UInt8 {
        precondition(b != 0, "division by zero in GF(16)")
        return a == 0 ? 0 : exp[(log[Int(a)] - log[Int(b)] + 15) % 15]
    }

    /// α^power for any integer power.
    static func alphaPower(_ power: Int) -> UInt8 { exp[((power % 15) + 15) % 15] }

    /// The generator polynomial's coefficients, highest degree first (monic, degree 5).
    static let generator: [UInt8] = {
        var poly: [UInt8] = [1]
        for i in 1...parityCount {
            // poly × (x + α^i)
            var next = [UInt8](repeating: 0, count: poly.count + 1)
            for (j, coefficient) in poly.enumerated() {
                next[j] ^= coefficient
                next[j + 1] ^= multiply(coefficient, alphaPower(i))
            }
            poly = next
        }
        return poly
    }()

    /// The codeword for `data` (each symbol 0..<16, at most 10 of them): the data followed by five parity symbols.
    static func encode(_ data: [UInt8]) -> [UInt8] {
        precondition(data.count + parityCount <= 15, "GF(16) Reed–Solomon codewords hold at most 10 data symbols")
        var remainder = [UInt8](repeating: 0, count: parityCount)
        for symbol in data {
            let feedback = symbol ^ remainder[0]
            for j in 0..<(parityCount - 1) {
                remainder[j] = remainder[j + 1] ^ multiply(feedback, generator[j + 1])
            }
            remainder[parityCount - 1] = multiply(feedback, generator[parityCount])
        }
        return data + remainder
    }

    /// The syndromes S_j = c(α^j), j = 1...5.
    static func syndromes(_ word: [UInt8]) -> [UInt8] {
        (1...parityCount).map { j in
            var value: UInt8 = 0
            for symbol in word { value = multiply(value, alphaPower(j)) ^ symbol }
            return value
        }
    }

    /// The corrected codeword and how many symbols were changed, or nil when `word` has more errors than the code
    /// can correct (or they cannot be located inside the shortened word).
    static func decode(_ word: [UInt8]) -> (codeword: [UInt8], corrections: Int)? {
        let n = word.count
        let s = syndromes(word)
        if s.allSatisfy({ $0 == 0 }) { return (word, 0) }
        let locator = errorLocator(syndromes: s)
        let errorCount = locator.count - 1
        guard errorCount >= 1, errorCount <= parityCount / 2 else { return nil }
        // Ω(x) = S(x)·Λ(x) mod x^5, with S(x) = Σ S_{j+1} x^j (coefficients lowest degree first).
        var omega = [UInt8](repeating: 0, count: parityCount)
        for i in 0..<parityCount {
            for j in 0...min(i, errorCount) { omega[i] ^= multiply(locator[j], s[i - j]) }
        }
        var corrected = word
        var found = 0
        for position in 0..<n {
            let degree = n - 1 - position
            let inverse = alphaPower(-degree)
            guard evaluate(locator, at: inverse) == 0 else { continue }
            // Λ'(x): the odd-degree terms of Λ, lowered by one degree (characteristic 2).
            var derivative: UInt8 = 0
            var i = 1
            while i <= errorCount {
                derivative ^= multiply(locator[i], alphaPower(-degree * (i - 1)))
                i += 2
            }
            guard derivative != 0 else { return nil }
            corrected[position] ^= divide(evaluate(omega, at: inverse), derivative)
            found += 1
        }
        guard found == errorCount, syndromes(corrected).allSatisfy({ $0 == 0 }) else { return nil }
        return (corrected, found)
    }

    /// Λ(x), lowest degree first, from the Berlekamp–Massey algorithm.
    static func errorLocator(syndromes s: [UInt8]) -> [UInt8] {
        var current: [UInt8] = [1]
        var previous: [UInt8] = [1]
        var length = 0
        var shift = 1
        var previousDiscrepancy: UInt8 = 1
        for n in 0..<s.count {
            var discrepancy = s[n]
            for i in 1..<current.count where i <= length { discrepancy ^= multiply(current[i], s[n - i]) }
            if discrepancy == 0 {
                shift += 1
                continue
            }
            let scale = divide(discrepancy, previousDiscrepancy)
            var next = current
            if next.count < previous.count + shift { next += [UInt8](repeating: 0, count: previous.count + shift - next.count) }
            for (i, coefficient) in previous.enumerated() { next[i + shift] ^= multiply(scale, coefficient) }
            if 2 * length <= n {
                previous = current
                length = n + 1 - length
                previousDiscrepancy = discrepancy
                shift = 1
            } else {
                shift += 1
            }
            current = next
        }
        while current.count > length + 1, current.last == 0 { current.removeLast() }
        // A locator whose degree is not its length means the errors cannot be located.
        return current.count == length + 1 ? current : [1] + [UInt8](repeating: 0, count: parityCount)
    }

    /// p(x) at x, for coefficients lowest degree first.
    static func evaluate(_ poly: [UInt8], at x: UInt8) -> UInt8 {
        var value: UInt8 = 0
        for coefficient in poly.reversed() { value = multiply(value, x) ^ coefficient }
        return value
    }
}
