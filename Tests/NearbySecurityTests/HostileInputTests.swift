import NearbyTestSupport
import Foundation
import NearbySecurity
import NearbyWire
import Testing

/// Random and mutated bytes against every security decoder: never a crash, always a `NearbyError`.
struct HostileInputTests {
    @Test("UKEY2 server and client reject random bytes with an error", .timeLimit(.minutes(5)))
    func ukey2Random() throws {
        var generator = SeededGenerator(seed: 1)
        for _ in 0..<3_000 {
            let bytes = generator.bytes(Int(generator.next() % 200))
            var server = Ukey2Server()
            if case .send = server.receive(bytes) { Issue.record("random bytes accepted as ClientInit") }
            var client = Ukey2Client()
            _ = try client.start()
            if case .sendAndComplete = client.receive(bytes) { Issue.record("random bytes accepted as ServerInit") }
        }
    }

    @Test("UKEY2 survives mutations of valid handshake messages", .timeLimit(.minutes(5)))
    func ukey2Mutations() throws {
        var generator = SeededGenerator(seed: 2)
        let outcome = try HandshakeHarness.run()
        for round in 0..<2_000 {
            let source = [outcome.clientInit, outcome.serverInit, outcome.clientFinished][round % 3]
            let mutated = generator.mutate(source)
            var server = Ukey2Server()
            _ = server.receive(mutated)
            var client = Ukey2Client()
            _ = try client.start()
            _ = client.receive(mutated)
            // A mutated ClientFinished never completes against the original commitment.
            if round % 3 == 2 && mutated != source {
                var committed = Ukey2Server()
                guard case .send = committed.receive(outcome.clientInit) else { continue }
                if case .complete = committed.receive(mutated) {
                    Issue.record("mutated ClientFinished passed the commitment check")
                }
            }
        }
    }

    @Test("SecureMessage decoding never accepts altered content and fails with a NearbyError", .timeLimit(.minutes(5)))
    func secureMessage() throws {
        var generator = SeededGenerator(seed: 3)
        let outcome = try HandshakeHarness.run()
        var client = outcome.client.makeSecureChannel()
        let server = outcome.server.makeSecureChannel()
        let good = try client.encode(Array(repeating: 0x41, count: 100))
        for round in 0..<5_000 {
            let bytes = round % 2 == 0 ? generator.bytes(Int(generator.next() % 300)) : generator.mutate(good)
            var receiver = server
            do {
                // Protobuf ignores unknown fields outside the signed bytes, so a mutation may still decode; what
                // must never happen is a different plaintext passing the signature check.
                let decoded = try receiver.decode(bytes)
                #expect(decoded == Array(repeating: 0x41, count: 100))
            } catch {
                // Typed throws: anything thrown here is a NearbyError.
                #expect(!error.message.isEmpty)
            }
        }
    }
}
