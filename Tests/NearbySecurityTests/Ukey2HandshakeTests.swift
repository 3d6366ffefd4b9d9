import Crypto
import Foundation
import NearbySecurity
import NearbyWire
import SwiftProtobuf
import Testing

struct Ukey2HandshakeTests {
    @Test("A full handshake gives both sides the same secrets and codes", .timeLimit(.minutes(5)))
    func fullHandshake() throws {
        let outcome = try HandshakeHarness.run()
        #expect(outcome.client.authString == outcome.server.authString)
        #expect(outcome.client.nextProtocolSecret == outcome.server.nextProtocolSecret)
        #expect(outcome.client.authString.count == 32)
        #expect(outcome.client.verificationDigits == outcome.server.verificationDigits)
        #expect(outcome.client.verificationToken == outcome.server.verificationToken)
        #expect(outcome.client.verificationToken.count == 5)
        #expect(outcome.client.clientInit == outcome.server.clientInit)
        #expect(outcome.client.serverInit == outcome.server.serverInit)
    }

    @Test("ClientInit carries version 1, a 32-byte random, the P256_SHA512 commitment and the next protocol", .timeLimit(.minutes(5)))
    func clientInitShape() throws {
        var client = Ukey2Client()
        let bytes = try client.start()
        let envelope = try ProtoUkey2Message(serializedBytes: bytes)
        #expect(envelope.messageType == .clientInit)
        let clientInit = try ProtoUkey2ClientInit(serializedBytes: envelope.messageData)
        #expect(clientInit.version == 1)
        #expect(clientInit.random.count == 32)
        #expect(clientInit.cipherCommitments.count == 1)
        #expect(clientInit.cipherCommitments[0].handshakeCipher == .p256Sha512)
        #expect(clientInit.cipherCommitments[0].commitment.count == 64)
        #expect(clientInit.nextProtocol == "AES_256_CBC-HMAC_SHA256")
        #expect(throws: NearbyError.self) { try client.start() }
    }

    @Test("The commitment is SHA-512 of the whole ClientFinished envelope", .timeLimit(.minutes(5)))
    func commitmentIsSHA512OfEnvelope() throws {
        let outcome = try HandshakeHarness.run()
        let envelope = try ProtoUkey2Message(serializedBytes: outcome.clientInit)
        let clientInit = try ProtoUkey2ClientInit(serializedBytes: envelope.messageData)
        #expect(Array(clientInit.cipherCommitments[0].commitment) == CryptoPrimitives.sha512(outcome.clientFinished))
    }

    @Test("A ClientFinished that does not match the commitment is rejected without an alert", .timeLimit(.minutes(5)))
    func wrongCommitment() throws {
        var client = Ukey2Client()
        var server = Ukey2Server()
        let clientInit = try client.start()
        guard case .send = server.receive(clientInit) else { Issue.record("no ServerInit"); return }
        // Another client's ClientFinished: valid shape, different key, so a different hash.
        var other = Ukey2Client()
        var otherServer = Ukey2Server()
        guard case .send(let otherServerInit) = otherServer.receive(try other.start()),
            case .sendAndComplete(let otherFinished, _) = other.receive(otherServerInit)
        else { Issue.record("helper handshake failed"); return }
        let failure = try #require(server.receive(otherFinished).failure)
        #expect(failure.alert == nil)
        #expect(failure.error.code == .handshakeFailed)
    }

    @Test("ClientInit rule violations produce the right alert", .timeLimit(.minutes(5)), arguments: [
        ("version", ProtoUkey2Alert.AlertType.badVersion),
        ("random", .badRandom),
        ("nextProtocol", .badNextProtocol),
        ("cipher", .badHandshakeCipher),
        ("emptyCommitment", .badHandshakeCipher),
        ("noCommitments", .badHandshakeCipher),
        ("type", .badMessage),
        ("data", .badMessageData),
        ("garbage", .badMessage),
    ])
    func clientInitAlerts(mutation: String, expected: ProtoUkey2Alert.AlertType) throws {
        var client = Ukey2Client()
        let good = try ProtoUkey2Message(serializedBytes: try client.start())
        var inner = try ProtoUkey2ClientInit(serializedBytes: good.messageData)
        var envelope = good
        var raw: [UInt8]?
        switch mutation {
        case "version": inner.version = 2
        case "random": inner.random = Data(repeating: 1, count: 31)
        case "nextProtocol": inner.nextProtocol = "AES_256_GCM"
        case "cipher": inner.cipherCommitments[0].handshakeCipher = .curve25519Sha512
        case "emptyCommitment": inner.cipherCommitments[0].commitment = Data()
        case "noCommitments": inner.cipherCommitments = []
        case "type": envelope.messageType = .serverInit
        case "data": envelope.messageData = Data([0xFF, 0xFF, 0xFF])
        default: raw = [0xFF, 0x00, 0x12]
        }
        if mutation != "type" && mutation != "data" {
            envelope.messageData = try inner.serializedData()
        }
        var server = Ukey2Server()
        let failure = try #require(server.receive(raw ?? (try envelope.serializedBytes() as [UInt8])).failure)
        let alertBytes = try #require(failure.alert)
        let alertEnvelope = try ProtoUkey2Message(serializedBytes: alertBytes)
        #expect(alertEnvelope.messageType == .alert)
        let alert = try ProtoUkey2Alert(serializedBytes: alertEnvelope.messageData)
        #expect(alert.type == expected)
        #expect(failure.error.code == .handshakeFailed)
    }

    @Test("ServerInit rule violations produce the right alert", .timeLimit(.minutes(5)), arguments: [
        ("version", ProtoUkey2Alert.AlertType.badVersion),
        ("random", .badRandom),
        ("cipher", .badHandshakeCipher),
        ("noKey", .badPublicKey),
        ("badKey", .badPublicKey),
        ("type", .badMessage),
    ])
    func serverInitAlerts(mutation: String, expected: ProtoUkey2Alert.AlertType) throws {
        var client = Ukey2Client()
        var server = Ukey2Server()
        guard case .send(let serverInitBytes) = server.receive(try client.start()) else {
            Issue.record("no ServerInit"); return
        }
        var envelope = try ProtoUkey2Message(serializedBytes: serverInitBytes)
        var inner = try ProtoUkey2ServerInit(serializedBytes: envelope.messageData)
        switch mutation {
        case "version": inner.version = 0
        case "random": inner.random = Data(repeating: 1, count: 33)
        case "cipher": inner.handshakeCipher = .curve25519Sha512
        case "noKey": inner.clearPublicKey()
        case "badKey": inner.publicKey = Data([1, 2, 3])
        default: envelope.messageType = .clientFinish
        }
        envelope.messageData = try inner.serializedData()
        let failure = try #require(client.receive(try envelope.serializedBytes() as [UInt8]).failure)
        let alertEnvelope = try ProtoUkey2Message(serializedBytes: try #require(failure.alert))
        let alert = try ProtoUkey2Alert(serializedBytes: alertEnvelope.messageData)
        #expect(alert.type == expected)
    }

    @Test("A peer's alert ends the handshake with a handshakeAlert error and no reply", .timeLimit(.minutes(5)))
    func peerAlert() throws {
        var client = Ukey2Client()
        var server = Ukey2Server()
        _ = try client.start()
        var bad = Ukey2Client()
        var badInit = try ProtoUkey2Message(serializedBytes: try bad.start())
        var inner = try ProtoUkey2ClientInit(serializedBytes: badInit.messageData)
        inner.version = 9
        badInit.messageData = try inner.serializedData()
        let alert = try #require(server.receive(try badInit.serializedBytes() as [UInt8]).failure?.alert)
        let failure = try #require(client.receive(alert).failure)
        #expect(failure.alert == nil)
        #expect(failure.error.code == .handshakeAlert)
    }

    @Test("Messages out of order are refused", .timeLimit(.minutes(5)))
    func outOfOrder() throws {
        var client = Ukey2Client()
        #expect(client.receive([0x08, 0x03]).failure?.error.code == .outOfOrderApiCall)
        let outcome = try HandshakeHarness.run()
        var server = Ukey2Server()
        guard case .send = server.receive(outcome.clientInit) else { Issue.record("no ServerInit"); return }
        // ClientInit again where ClientFinished is expected: silently rejected.
        #expect(server.receive(outcome.clientInit).failure?.alert == nil)
        #expect(server.receive(outcome.clientFinished).failure?.error.code == .outOfOrderApiCall)
    }
}
