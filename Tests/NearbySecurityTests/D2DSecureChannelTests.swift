import NearbyTestSupport
import Foundation
import NearbySecurity
import NearbyWire
import SwiftProtobuf
import Testing

struct D2DSecureChannelTests {
    private func channels() throws -> (client: D2DSecureChannel, server: D2DSecureChannel) {
        let outcome = try HandshakeHarness.run()
        return (outcome.client.makeSecureChannel(), outcome.server.makeSecureChannel())
    }

    @Test("Client and server derive mirrored keys", .timeLimit(.minutes(5)))
    func mirroredKeys() throws {
        let (client, server) = try channels()
        #expect(client.keys == server.keys)
        #expect(client.keys.client != client.keys.server)
        #expect(client.keys.client.encryptionKey != client.keys.client.signingKey)
    }

    @Test("10,000 messages each way decode in order", .timeLimit(.minutes(5)))
    func tenThousandEachWay() throws {
        var (client, server) = try channels()
        var generator = SeededGenerator(seed: 42)
        for index in 0..<10_000 {
            let outbound = generator.bytes(index % 300)
            #expect(try server.decode(try client.encode(outbound)) == outbound)
            let inbound = generator.bytes((index * 7) % 300)
            #expect(try client.decode(try server.encode(inbound)) == inbound)
        }
        #expect(client.lastSentSequenceNumber == 10_000)
        #expect(server.lastReceivedSequenceNumber == 10_000)
        #expect(server.lastSentSequenceNumber == 10_000)
    }

    @Test("The wire form has the schemes, a 16-byte IV, D2D metadata and sequence number 1 first", .timeLimit(.minutes(5)))
    func wireForm() throws {
        var (client, _) = try channels()
        let bytes = try client.encode([1, 2, 3])
        let secure = try ProtoSecureMessage(serializedBytes: bytes)
        #expect(secure.signature.count == 32)
        let headerAndBody = try ProtoHeaderAndBody(serializedBytes: secure.headerAndBody)
        #expect(headerAndBody.header.signatureScheme == .hmacSha256)
        #expect(headerAndBody.header.encryptionScheme == .aes256Cbc)
        #expect(headerAndBody.header.iv.count == 16)
        #expect(Array(headerAndBody.header.publicMetadata) == [0x08, 0x0D, 0x10, 0x01])
        #expect(headerAndBody.body.count % 16 == 0)
        #expect(client.lastSentSequenceNumber == 1)
    }

    @Test("A tampered signature, header or body is rejected and the counter stays put", .timeLimit(.minutes(5)))
    func tampering() throws {
        var (client, server) = try channels()
        let good = try client.encode(Array("hello".utf8))
        var secure = try ProtoSecureMessage(serializedBytes: good)

        var badSignature = secure
        var signature = Array(badSignature.signature)
        signature[0] ^= 0x80
        badSignature.signature = Data(signature)
        let signatureError = #expect(throws: NearbyError.self) { try server.decode(try badSignature.serializedBytes() as [UInt8]) }
        #expect(signatureError?.code == .authenticationFailed)

        var signed = Array(secure.headerAndBody)
        signed[signed.count - 1] ^= 0x01
        secure.headerAndBody = Data(signed)
        let bodyError = #expect(throws: NearbyError.self) { try server.decode(try secure.serializedBytes() as [UInt8]) }
        #expect(bodyError?.code == .authenticationFailed)

        #expect(server.lastReceivedSequenceNumber == 0)
        #expect(try server.decode(good) == Array("hello".utf8))
    }

    @Test("Replayed, skipped and reordered messages are rejected", .timeLimit(.minutes(5)))
    func sequenceRules() throws {
        var (client, server) = try channels()
        let first = try client.encode([1])
        let second = try client.encode([2])
        let third = try client.encode([3])
        let fourth = try client.encode([4])

        #expect(throws: NearbyError.self) { try server.decode(second) }  // skipped 1
        #expect(try server.decode(first) == [1])
        let replay = #expect(throws: NearbyError.self) { try server.decode(first) }
        #expect(replay?.code == .sequenceMismatch)
        #expect(throws: NearbyError.self) { try server.decode(third) }  // reordered: 3 before 2
        #expect(try server.decode(second) == [2])
        #expect(try server.decode(third) == [3])
        #expect(try server.decode(fourth) == [4])
    }

    @Test("A message signed with the other direction's keys is rejected", .timeLimit(.minutes(5)))
    func wrongDirection() throws {
        var (client, _) = try channels()
        var clientCopy = client
        let own = try client.encode([9])
        #expect(throws: NearbyError.self) { try clientCopy.decode(own) }
    }

    @Test("The channel continues unchanged when moved to a new socket", .timeLimit(.minutes(5)))
    func survivesMove() throws {
        var (client, server) = try channels()
        for index in 0..<5 { _ = try server.decode(try client.encode([UInt8(index)])) }
        // A bandwidth upgrade hands the same value to the new channel's reader and writer.
        var movedClient = client
        var movedServer = server
        #expect(try movedServer.decode(try movedClient.encode([42])) == [42])
        #expect(movedServer.lastReceivedSequenceNumber == 6)
        #expect(try movedClient.decode(try movedServer.encode([43])) == [43])
    }

    @Test("A server and client from separate handshakes cannot talk", .timeLimit(.minutes(5)))
    func separateHandshakes() throws {
        var (client, _) = try channels()
        var (_, otherServer) = try channels()
        #expect(throws: NearbyError.self) { try otherServer.decode(try client.encode([1])) }
    }
}
