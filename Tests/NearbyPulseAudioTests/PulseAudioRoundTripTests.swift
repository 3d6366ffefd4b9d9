import Foundation
import NearbyAudio
import NearbyPulseAudio
import NearbyTestSupport
import NearbyWire
import Testing

/// The audio modem through a real sound server: a private PulseAudio daemon with only a null sink; one thread plays
/// a token into the sink, another records the sink's monitor and decodes it.
@Suite("PulseAudio round trip", .serialized, .timeLimit(.minutes(5)))
struct PulseAudioRoundTripTests {
    @Test("A token played into the null sink is decoded from its monitor", arguments: [false, true])
    func tokenThroughNullSink(withSpeechAndNoise: Bool) async throws {
        let daemon = try await PrivatePulseAudioServer()
        defer { daemon.stop() }
        var random = SeededGenerator(seed: withSpeechAndNoise ? 0x9A_0002 : 0x9A_0001)
        let token = random.bytes(8)
        let frame = try AudioTokenEncoder().samples(for: token)
        let gap = [Float](repeating: 0, count: 4_800)
        let (server, sink, monitor) = (daemon.server, daemon.sink, daemon.monitor)

        let recorder = try PulseAudioRecorder(server: server, source: monitor)
        async let heard = onOwnThread { () throws -> (tokens: [DecodedAudioToken], loudest: Float) in
            var decoder = AudioTokenDecoder()
            var found: [DecodedAudioToken] = []
            var recorded = 0
            var loudest: Float = 0
            // At most 15 s of audio (the broadcast below lasts about 4.5 s).
            while found.isEmpty, recorded < 15 * 48_000 {
                let chunk = try recorder.record(count: 2_400)
                recorded += chunk.count
                loudest = max(loudest, chunk.map(abs).max() ?? 0)
                found += decoder.consume(chunk)
            }
            return (found, loudest)
        }
        // The background, when asked for, plays into the same sink at the same time as the token.
        let noise = withSpeechAndNoise ? SyntheticSound.speechAndNoise(seconds: 5, sampleRate: 48_000, seed: 0x9A_0003) : []
        async let backgroundPlayed: Void = onOwnThread {
            guard !noise.isEmpty else { return }
            let player = try PulseAudioPlayer(server: server, sink: sink, streamName: "background")
            try player.play(noise)
            try player.drain()
        }
        try await onOwnThread {
            let player = try PulseAudioPlayer(server: server, sink: sink)
            for _ in 0..<3 { try player.play(gap + frame) }
            try player.drain()
        }
        try await backgroundPlayed
        let (tokens, loudest) = try await heard
        #expect(tokens.first?.token == token)
        // With the background, the recording was louder than the token alone (amplitude 0.5) could make it.
        #expect(withSpeechAndNoise == (loudest > 0.6))
    }

    @Test("A missing source is a mediumUnavailable error whose cause says noDevice")
    func missingSource() async throws {
        let daemon = try await PrivatePulseAudioServer()
        defer { daemon.stop() }
        let error = #expect(throws: NearbyError.self) {
            try PulseAudioRecorder(server: daemon.server, source: "no-such-microphone")
        }
        #expect(error?.code == .mediumUnavailable)
        #expect((error?.cause as? PulseAudioFailure)?.problem == .noDevice)
    }

    @Test("No sound server is a mediumUnavailable error whose cause says serverUnavailable")
    func noServer() throws {
        let error = #expect(throws: NearbyError.self) {
            try PulseAudioPlayer(server: "unix:/nonexistent/nearby-no-pulse/native")
        }
        #expect(error?.code == .mediumUnavailable)
        #expect((error?.cause as? PulseAudioFailure)?.problem == .serverUnavailable)
    }
}
