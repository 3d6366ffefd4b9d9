import NearbyTestSupport
import Testing

@testable import NearbyAudio

/// The modem's error figures at several signal-to-noise ratios (white Gaussian noise over the whole band; the SNR
/// is the power of a tone over the power of the noise in 0…24 kHz). Printed as a table, quoted in
/// docs/AUDIO-MODEM.md; the assertions only pin the behaviour well inside the measured margins.
@Suite("Audio modem error rates", .timeLimit(.minutes(5)))
struct AudioModemErrorRateTests {
    struct Figures {
        var snr: Double
        var frames = 0
        var symbols = 0
        var symbolErrors = 0
        var bitErrors = 0
        var missed = 0
        var wrong = 0

        var line: String {
            let ser = Double(symbolErrors) / Double(symbols)
            let ber = Double(bitErrors) / Double(4 * symbols)
            let fer = Double(missed + wrong) / Double(frames)
            return "SNR \(pad(snr, 6)) dB: raw symbol error rate \(pad(ser, 8)), raw bit error rate \(pad(ber, 8)), "
                + "token error rate \(pad(fer, 6)) (\(missed) missed, \(wrong) wrong of \(frames))"
        }

        private func pad(_ value: Double, _ width: Int) -> String {
            let text = "\((value * 10_000).rounded() / 10_000)"
            return String(repeating: " ", count: max(0, width - text.count)) + text
        }
    }

    /// Sends `frames` random tokens through noise at `snr` (and optional echo and drift), counting raw symbol and
    /// bit errors (loudest-tone decisions) at the known frame starts and the tokens the streaming decoder misses or
    /// gets wrong.
    static func measure(
        snr: Double, frames: Int, seed: UInt64, echo: Bool = false, ppm: Double = 0
    ) throws -> Figures {
        var random = SeededGenerator(seed: seed)
        let configuration = AudioModemConfiguration.standard
        let tokens = (0..<frames).map { _ in random.bytes(configuration.tokenLength) }
        let (clean, starts) = try AudioModemRoundTripTests.transmission(tokens, random: &random)
        var channel = echo ? AudioTestSignals.addingEchoes(to: clean, [(240, 0.71), (672, 0.5), (2160, 0.32)]) : clean
        if ppm != 0 { channel = AudioTestSignals.resampled(channel, ppm: ppm) }
        let received = AudioTestSignals.addingNoise(to: channel, snr: snr, amplitude: configuration.amplitude, random: &random)
        var figures = Figures(snr: snr, frames: frames)
        for (token, start) in zip(tokens, starts) {
            let sent = try AudioFrameCoding.dataSymbols(for: token, layout: configuration.layout)
            let heard = AudioTokenDecoder.decisions(
                of: received, frameStart: Int((Double(start) * (1 + ppm * 1e-6)).rounded()),
                configuration: configuration
            ).map(\.best)
            figures.symbols += sent.count
            for (s, h) in zip(sent, heard) where s != h {
                figures.symbolErrors += 1
                figures.bitErrors += (s ^ h).nonzeroBitCount
            }
        }
        let decoded = AudioTestSignals.decode(received).map(\.token)
        figures.wrong = decoded.filter { !tokens.contains($0) }.count
        figures.missed = tokens.filter { !decoded.contains($0) }.count
        return figures
    }

    @Test("Error figures from -10 to -22 dB SNR (printed); no wrong token ever, none missed down to -14 dB")
    func errorFigures() throws {
        var table: [String] = []
        for (index, snr) in [-10.0, -14, -16, -18, -19, -20, -22].enumerated() {
            let figures = try Self.measure(snr: snr, frames: 40, seed: 0xBE4_0000 + UInt64(index))
            table.append(figures.line)
            #expect(figures.wrong == 0)
            if snr >= -14 { #expect(figures.missed == 0) }
        }
        let echoDrift = try Self.measure(snr: -14, frames: 40, seed: 0xBE4_0100, echo: true, ppm: 100)
        table.append(echoDrift.line + " with echoes and +100 ppm drift")
        #expect(echoDrift.wrong == 0)
        #expect(echoDrift.missed <= 12)  // 6 of 40 measured; 14 without the likelihood pass
        print("Audio modem error figures (48 kHz, 8-byte tokens, 40 frames per row):\n" + table.joined(separator: "\n"))
    }
}
