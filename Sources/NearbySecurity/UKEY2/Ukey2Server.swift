import Crypto
import Foundation
import NearbyWire

/// The responder's side of UKEY2 as a value-type state machine.
///
/// Pass the peer's ClientInit to ``receive(_:)`` and send the ServerInit it returns
/// (``Ukey2Action/send(_:)``); pass ClientFinished to ``receive(_:)`` again to get
/// ``Ukey2Action/complete(_:)``. ClientFinished must hash (SHA-512, compared in constant time) to the commitment
/// ClientInit carried. Inputs are envelopes without their length prefix. No I/O, no clocks.
package struct Ukey2Server: Sendable {
    private enum State: Sendable {
        case awaitingClientInit
        case awaitingClientFinished(clientInit: [UInt8], serverInit: [UInt8], commitment: [UInt8])
        case finished
    }

    private let privateKey: P256.KeyAgreement.PrivateKey
    private let random: [UInt8]
    private var state: State = .awaitingClientInit

    /// Creates a server with a fresh ephemeral key and random, or fixed ones (for tests and known-answer vectors).
    package init(privateKey: P256.KeyAgreement.PrivateKey = .init(), random: [UInt8]? = nil) {
        self.privateKey = privateKey
        self.random = random ?? CryptoPrimitives.randomBytes(Ukey2Constants.randomLength)
    }

    /// Handles the peer's next handshake message.
    package mutating func receive(_ bytes: some Collection<UInt8>) -> Ukey2Action {
        let message = Array(bytes)
        switch state {
        case .awaitingClientInit:
            return receiveClientInit(message)
        case .awaitingClientFinished(let clientInit, let serverInit, let commitment):
            state = .finished
            return receiveClientFinished(message, clientInit: clientInit, serverInit: serverInit, commitment: commitment)
        case .finished:
            return .fail(alert: nil, NearbyError(.outOfOrderApiCall, "UKEY2 server handshake is already over"))
        }
    }

    private mutating func receiveClientInit(_ clientInitBytes: [UInt8]) -> Ukey2Action {
        state = .finished
        guard let envelope = try? ProtoUkey2Message(serializedBytes: clientInitBytes) else {
            return Ukey2Envelope.failWithAlert(.badMessage, "Can't parse ClientInit envelope")
        }
        if envelope.messageType == .alert {
            return .fail(alert: nil, Ukey2Envelope.peerAlertError(envelope))
        }
        guard envelope.hasMessageType, envelope.messageType == .clientInit else {
            return Ukey2Envelope.failWithAlert(.badMessage, "Expected CLIENT_INIT message type")
        }
        guard envelope.hasMessageData else {
            return Ukey2Envelope.failWithAlert(.badMessageData, "ClientInit envelope has no data")
        }
        guard let clientInit = try? ProtoUkey2ClientInit(serializedBytes: Array(envelope.messageData)) else {
            return Ukey2Envelope.failWithAlert(.badMessageData, "Can't parse ClientInit")
        }
        guard clientInit.hasVersion, clientInit.version == Ukey2Constants.version else {
            return Ukey2Envelope.failWithAlert(.badVersion, "ClientInit version missing or not 1")
        }
        guard clientInit.hasRandom, clientInit.random.count == Ukey2Constants.randomLength else {
            return Ukey2Envelope.failWithAlert(.badRandom, "ClientInit random missing or not 32 bytes")
        }
        guard !clientInit.cipherCommitments.isEmpty else {
            return Ukey2Envelope.failWithAlert(.badHandshakeCipher, "ClientInit has no cipher commitments")
        }
        var commitment: [UInt8]?
        for candidate in clientInit.cipherCommitments {
            guard candidate.hasHandshakeCipher, candidate.hasCommitment, !candidate.commitment.isEmpty else {
                return Ukey2Envelope.failWithAlert(.badHandshakeCipher, "ClientInit has a malformed commitment")
            }
            if candidate.handshakeCipher == .p256Sha512 {
                commitment = Array(candidate.commitment)
            }
        }
        guard let commitment else {
            return Ukey2Envelope.failWithAlert(.badHandshakeCipher, "ClientInit has no P256_SHA512 commitment")
        }
        guard clientInit.hasNextProtocol, clientInit.nextProtocol == Ukey2Constants.nextProtocol else {
            return Ukey2Envelope.failWithAlert(.badNextProtocol, "ClientInit next protocol is not supported")
        }

        var serverInit = ProtoUkey2ServerInit()
        serverInit.version = Ukey2Constants.version
        serverInit.random = Data(random)
        serverInit.handshakeCipher = .p256Sha512
        serverInit.publicKey = Data(Ukey2PublicKeyCoding.encode(privateKey.publicKey))
        let serverInitBytes = Ukey2Envelope.wrap(.serverInit, Ukey2Envelope.serialize(serverInit))
        state = .awaitingClientFinished(
            clientInit: clientInitBytes, serverInit: serverInitBytes, commitment: commitment)
        return .send(serverInitBytes)
    }

    private func receiveClientFinished(
        _ bytes: [UInt8], clientInit: [UInt8], serverInit: [UInt8], commitment: [UInt8]
    ) -> Ukey2Action {
        guard let envelope = try? ProtoUkey2Message(serializedBytes: bytes) else {
            return Ukey2Envelope.failSilently("Can't parse ClientFinished envelope")
        }
        if envelope.messageType == .alert {
            return .fail(alert: nil, Ukey2Envelope.peerAlertError(envelope))
        }
        guard envelope.hasMessageType, envelope.messageType == .clientFinish else {
            return Ukey2Envelope.failSilently("Expected CLIENT_FINISH message type")
        }
        guard CryptoPrimitives.constantTimeEquals(CryptoPrimitives.sha512(bytes), commitment) else {
            return Ukey2Envelope.failSilently("ClientFinished does not match the ClientInit commitment")
        }
        guard envelope.hasMessageData,
            let finished = try? ProtoUkey2ClientFinished(serializedBytes: Array(envelope.messageData)),
            finished.hasPublicKey
        else {
            return Ukey2Envelope.failSilently("ClientFinished has no public key")
        }
        do {
            let peerKey = try Ukey2PublicKeyCoding.decode(finished.publicKey)
            let x = try Ukey2HandshakeResult.sharedX(privateKey, peerKey)
            return .complete(
                Ukey2HandshakeResult(role: .server, clientInit: clientInit, serverInit: serverInit, sharedSecretX: x))
        } catch {
            return .fail(alert: nil, error)
        }
    }
}
