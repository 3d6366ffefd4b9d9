#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The second decoding pass, for rooms whose echoes fade some tones (a reflection 5 ms late cancels every other
/// tone by 11 dB): estimate how strongly each tone arrives, then decide each slot by maximum likelihood for a tone of
/// that strength in white noise, so a faded tone can win because the strong tones are absent.
struct AudioChannelEstimate: Sendable {
    /// Expected signal energy per tone bin (a², noise removed).
    var signalEnergy: [Float]
    /// Noise energy per bin (N0).
    var noiseEnergy: Float

    /// Estimates the channel from the preamble windows (whose tones are known) and the data windows whose first-pass
    /// decision was more reliable than the median.
    init(preamble: [[Float]], data: [[Float]], firstPass: [AudioSymbolDecision]) {
        let toneCount = AudioModemConfiguration.toneCount
        var sums = [Float](repeating: 0, count: toneCount)
        var counts = [Float](repeating: 0, count: toneCount)
        for (energies, tone) in zip(preamble, AudioFrameLayout.preambleTones) {
            sums[tone] += energies[tone]
            counts[tone] += 1
        }
        let medianReliability = firstPass.map(\.reliability).sorted()[firstPass.count / 2]
        var noise: [Float] = []
        for (slot, (energies, decision)) in zip(data, firstPass).enumerated() {
            let tone = (Int(decision.best) + AudioFrameLayout.whitening(slot: slot)) & 15
            if decision.reliability >= medianReliability {
                sums[tone] += energies[tone]
                counts[tone] += 1
            }
            noise += energies.enumerated().filter { $0.offset != tone }.map(\.element)
        }
        // The median of exponentially distributed noise energies is N0·ln 2.
        let noiseEnergy = max(noise.sorted()[noise.count / 2] / Float(M_LN2), .leastNormalMagnitude)
        self.noiseEnergy = noiseEnergy
        let measured = (0..<toneCount).map { counts[$0] > 0 ? max(sums[$0] / counts[$0] - noiseEnergy, 0) : -1 }
        let known = measured.filter { $0 >= 0 }.sorted()
        let typical = known.isEmpty ? noiseEnergy : known[known.count / 2]
        let floor = 0.01 * (known.last ?? noiseEnergy)
        signalEnergy = measured.map { $0 < 0 ? typical : max($0, floor) }
    }

    /// The decision for data slot `slot` by the log-likelihood of each tone: ln I0(2·a·|r|/N0) − a²/N0.
    func decision(energies: [Float], slot: Int) -> AudioSymbolDecision {
        let metrics = (0..<AudioModemConfiguration.toneCount).map { tone -> Float in
            let a = signalEnergy[tone]
            let x = 2 * (a * energies[tone]).squareRoot() / noiseEnergy
            return Self.logBesselI0(x) - a / noiseEnergy
        }
        return AudioSymbolDecision(metrics: metrics, slot: slot)
    }

    /// ln I0(x) for x ≥ 0 (Abramowitz and Stegun 9.8.1 and 9.8.2).
    static func logBesselI0(_ x: Float) -> Float {
        if x < 3.75 {
            let t = Double(x / 3.75) * Double(x / 3.75)
            let value = 1 + t * (3.5156229 + t * (3.0899424 + t * (1.2067492 + t * (0.2659732 + t * (0.0360768
                + t * 0.0045813)))))
            return Float(log(value))
        }
        let t = Double(3.75 / x)
        let series = 0.39894228 + t * (0.01328592 + t * (0.00225319 + t * (-0.00157565 + t * (0.00916281
            + t * (-0.02057706 + t * (0.02635537 + t * (-0.01647633 + t * 0.00392377)))))))
        return Float(Double(x) - 0.5 * log(Double(x)) + log(series))
    }
}
