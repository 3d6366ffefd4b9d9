import NearbyTestSupport
import Testing

@testable import NearbyAudio

/// The second decoding pass (channel estimate and likelihood decisions) recovers frames that the loudest-tone pass
/// loses when an early reflection fades every other tone.
@Suite("Audio modem channel estimate", .timeLimit(.minutes(5)))
struct AudioModemChannelEstimateTests {
    @Test("A 5 ms reflection at -3 dB plus noise at -14 dB: the likelihood pass decodes frames the first pass cannot")
    func combFilteredFrames() throws {
        let configuration = AudioModemConfiguration.standard
        let layout = configuration.layout
        let encoder = AudioTokenEncoder()
        var random = SeededGenerator(seed: 0xC0_3B)
        var firstPassOnly = 0
        var bothPasses = 0
        let frames = 20
        for _ in 0..<frames {
            let token = random.bytes(8)
            let echoed = AudioTestSignals.addingEchoes(to: try encoder.samples(for: token), [(240, 0.71)])
            let received = AudioTestSignals.addingNoise(to: echoed, snr: -14, amplitude: 0.5, random: &random)
            let energies = AudioTokenDecoder.slotEnergies(of: received, frameStart: 0, configuration: configuration)
            let first = AudioTokenDecoder.decisions(of: received, frameStart: 0, configuration: configuration)
            if AudioFrameDecision.token(from: first, layout: layout)?.token == token { firstPassOnly += 1 }
            let decoded = AudioTokenDecoder.decode(
                preamble: Array(energies.prefix(layout.preambleSlotCount)),
                data: Array(energies.dropFirst(layout.preambleSlotCount)), layout: layout)
            if let decoded {
                #expect(decoded.token == token)
                bothPasses += 1
            }
        }
        print("5 ms reflection at -3 dB, -14 dB SNR: first pass \(firstPassOnly)/\(frames), both passes \(bothPasses)/\(frames)")
        #expect(bothPasses > firstPassOnly)
    }

    @Test("ln I0 matches its series at small and large arguments")
    func logBessel() {
        #expect(abs(AudioChannelEstimate.logBesselI0(0)) < 1e-6)
        #expect(abs(AudioChannelEstimate.logBesselI0(1) - 0.235_914) < 1e-4)  // ln 1.266066
        #expect(abs(AudioChannelEstimate.logBesselI0(10) - 7.942_97) < 1e-3)  // ln 2815.717
    }
}
