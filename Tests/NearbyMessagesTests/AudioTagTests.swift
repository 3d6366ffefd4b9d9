import Foundation
import NearbyPulseAudio
import NearbyWire
import Testing

@testable import NearbyMessages

/// The audio tag's bytes, the presence gate's rule, and how sound-server failures map to audio problems.
@Suite("Audio tag and gate", .timeLimit(.minutes(5)))
struct AudioTagTests {
    static let token = AudioToken([1, 2, 3, 4, 5, 6, 7, 8])!

    @Test("a tagged advertisement: 4D 13, the token, then the envelope; split gives both back")
    func tagLayout() throws {
        let message = Message(content: Data("hi".utf8), namespace: "n", type: "t")
        let (envelope, bytes) = AudioTag.advertisement(for: message, token: Self.token)
        #expect(envelope == .message(message))
        #expect(Array(bytes.prefix(10)) == [0x4D, 0x13, 1, 2, 3, 4, 5, 6, 7, 8])
        #expect(Array(bytes.dropFirst(10)) == MessageEnvelope.message(message).bytes)
        let (token, rest) = AudioTag.split(Data(bytes))
        #expect(token == Self.token)
        #expect(try MessageEnvelope.decode(rest) == .message(message))
        let untagged = Data(MessageEnvelope.message(message).bytes)
        #expect(AudioTag.split(untagged).token == nil)
        #expect(AudioTag.split(untagged).envelope == untagged)
        #expect(AudioTag.split(Data([0x4D, 0x13, 1, 2])).token == nil, "too short for a token")
    }

    @Test("the tag takes 10 bytes of the 131: a message that no longer fits goes as a descriptor")
    func tagMakesRoom() {
        // Header 2 + labels 2 → 127 content bytes make a 131-byte envelope.
        let fits = Message(content: Data(repeating: 7, count: 117))
        let tooBig = Message(content: Data(repeating: 7, count: 118))
        #expect(AudioTag.advertisement(for: fits, token: Self.token).bytes.count == 131)
        #expect(AudioTag.advertisement(for: tooBig, token: Self.token).envelope == .descriptor(MessageDescriptor(tooBig)))
        #expect(AudioTag.advertisement(for: tooBig, token: nil).envelope == .message(tooBig))
    }

    @Test("the gate presents a known endpoint while its token is heard, and only then")
    func gateRule() {
        var gate = AudioPresenceGate(audibleFor: .seconds(5))
        let message = Message(text: "m")
        #expect(gate.advertised("A", token: Self.token).isEmpty)
        #expect(gate.offer("A", message, now: .zero).isEmpty, "not heard yet")
        #expect(gate.heard(Self.token, now: .seconds(1)) == [.startTimer(Self.token, after: .seconds(5)), .present("A", message)])
        #expect(gate.heard(Self.token, now: .seconds(3)).isEmpty, "already audible: no new timer, no new present")
        #expect(gate.timerFired(Self.token, now: .seconds(6)) == [.startTimer(Self.token, after: .seconds(2))])
        #expect(gate.timerFired(Self.token, now: .seconds(8)) == [.gone("A")])
        #expect(gate.audibleTokens.isEmpty)
        // Heard before the endpoint is known: presented as soon as it is.
        _ = gate.heard(Self.token, now: .seconds(9))
        #expect(gate.advertised("B", token: Self.token).isEmpty)
        #expect(gate.offer("B", message, now: .seconds(9)) == [.present("B", message)])
        #expect(gate.endpointGone("B") == [.gone("B")])
        #expect(gate.advertised("C", token: nil).isEmpty)
        #expect(gate.offer("C", message, now: .seconds(9)).isEmpty, "no token: never heard")
    }

    @Test("sound-server failures map to audio problems")
    func failureMapping() {
        // PulseAudio's codes: PA_ERR_ACCESS 1, PA_ERR_NOENTITY 5, PA_ERR_CONNECTIONREFUSED 6, PA_ERR_BUSY 26.
        func problem(_ code: Int32) -> AudioDeviceStatus.Problem {
            AudioDeviceStatus.Problem(NearbyError(.mediumUnavailable, "x", cause: PulseAudioFailure(code: code)))
        }
        #expect(problem(1) == .permissionDenied)
        #expect(problem(5) == .noDevice)
        #expect(problem(6) == .soundServerUnavailable)
        #expect(problem(26) == .deviceBusy)
        #expect(problem(3) == .other)
        #expect(AudioDeviceStatus.Problem(CancellationError()) == .other)
    }
}
