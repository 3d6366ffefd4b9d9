/// The receiver's view of one data slot: its most and second-most likely symbols and how sure it is.
struct AudioSymbolDecision: Sendable, Hashable {
    /// The symbol (0..<16, whitening removed) of the strongest tone.
    var best: UInt8
    /// The symbol of the second-strongest tone.
    var runnerUp: UInt8
    /// (strongest − second strongest) / sum of all 16 energies: near 1 for a clean tone, near 0 when unsure.
    var reliability: Float

    /// The decision for data slot `slot` from the 16 tone energies of its analysis window.
    init(energies: UnsafeBufferPointer<Float>, slot: Int) {
        var bestTone = 0
        var secondTone = 1
        if energies[1] > energies[0] { (bestTone, secondTone) = (1, 0) }
        var total = energies[0] + energies[1]
        for tone in 2..<AudioModemConfiguration.toneCount {
            let e = energies[tone]
            total += e
            if e > energies[bestTone] {
                secondTone = bestTone
                bestTone = tone
            } else if e > energies[secondTone] {
                secondTone = tone
            }
        }
        let whitening = AudioFrameLayout.whitening(slot: slot)
        best = UInt8((bestTone - whitening) & 15)
        runnerUp = UInt8((secondTone - whitening) & 15)
        reliability = total > 0 ? (energies[bestTone] - energies[secondTone]) / total : 0
    }

    /// The decision for data slot `slot` from per-tone log-likelihoods (tone order, whitening not yet removed);
    /// the reliability is the log-likelihood margin of the winner.
    init(metrics: [Float], slot: Int) {
        let order = metrics.indices.sorted { metrics[$0] > metrics[$1] }
        let whitening = AudioFrameLayout.whitening(slot: slot)
        best = UInt8((order[0] - whitening) & 15)
        runnerUp = UInt8((order[1] - whitening) & 15)
        reliability = metrics[order[0]] - metrics[order[1]]
    }
}

/// Turns the decisions of a frame's data slots into a token: Reed–Solomon decoding of both codewords with a small
/// Chase search over the least reliable symbols, then the CRC-16 check.
enum AudioFrameDecision {
    /// How many of a codeword's least reliable symbols the Chase search may replace by their runner-up.
    static let chaseDepth = 4

    /// The token and the number of symbols corrected, or nil when the frame does not decode or fails its CRC.
    static func token(
        from decisions: [AudioSymbolDecision], layout: AudioFrameLayout
    ) -> (token: [UInt8], corrections: Int)? {
        let first = stride(from: 0, to: decisions.count, by: 2).map { decisions[$0] }
        let second = stride(from: 1, to: decisions.count, by: 2).map { decisions[$0] }
        guard let a = chaseDecode(first), let b = chaseDecode(second),
            let token = AudioFrameCoding.token(fromCodewords: a.codeword, b.codeword, layout: layout)
        else { return nil }
        return (token, a.corrections + b.corrections)
    }

    /// Decodes one codeword: first its hard decisions, then with subsets of the least reliable symbols replaced by
    /// their runner-up (fewest replacements first). `corrections` counts symbols that differ from the hard decisions.
    static func chaseDecode(_ decisions: [AudioSymbolDecision]) -> (codeword: [UInt8], corrections: Int)? {
        let hard = decisions.map(\.best)
        if let decoded = GF16ReedSolomon.decode(hard) { return decoded }
        let weakest = decisions.indices.sorted { decisions[$0].reliability < decisions[$1].reliability }
            .prefix(chaseDepth)
        let masks = (1..<(1 << weakest.count)).sorted { $0.nonzeroBitCount < $1.nonzeroBitCount }
        for mask in masks {
            var word = hard
            for (bit, position) in weakest.enumerated() where mask & (1 << bit) != 0 {
                word[position] = decisions[position].runnerUp
            }
            if let decoded = GF16ReedSolomon.decode(word) {
                let changed = zip(decoded.codeword, hard).filter { $0 != $1 }.count
                return (decoded.codeword, changed)
            }
        }
        return nil
    }
}
