import Crypto
import Foundation
import NearbyWire

/// The initiator's side of UKEY2 as a value-type state machine.
///
/// Call ``start()`` to get ClientInit (M1), send it, then pass the peer's reply to ``receive(_:)`` and perform the
/// returned ``Ukey2Action``: on success it is ``Ukey2Action/sendAndComplete(_:_:)`` with ClientFinished and the
/// result. Inputs are envelopes without their length prefix. No I/O, no clocks: the caller owns timeouts.
public struct Ukey2Client: Sendable {
    private enum State: Sendable {
        case idle
        case awaitingServerInit(clientInit: [UInt8], clientFinished: [UInt8])
        case finished
    }

    private let privateKey: P256.KeyAgreement.PrivateKey
    private let random: [UInt8]
    private var state: State = .idle

    /// Creates a client with a fresh ephemeral key and random, or fixed ones (for tests and known-answer vectors).
    public init(privateKey: P256.KeyAgreement.PrivateKey = .init(), random: [UInt8]? = nil) {
        self.privateKey = privateKey
        self.random = random ?? CryptoPrimitives.randomBytes(Ukey2Constants.randomLength)
    }

    /// Builds ClientFinished first (its SHA-512 is the commitment), then ClientInit, and returns ClientInit's bytes.
    /// - Throws: `NearbyError.Code.outOfOrderApiCall` when called twice.
    public mutating func start() throws(NearbyError) -> [UInt8] {
        guard case .idle = state else {
            throw NearbyError(.outOfOrderApiCall, "UKEY2 client already started")
        }
        var finished = ProtoUkey2ClientFinished()
        finished.publicKey = Data(Ukey2PublicKeyCoding.encode(privateKey.publicKey))
        let clientFinished = Ukey2Envelope.wrap(.clientFinish, Ukey2Envelope.serialize(finished))

        var commitment = ProtoUkey2ClientInit.CipherCommitment()
        commitment.handshakeCipher = .p256Sha512
        commitment.commitment = Data(CryptoPrimitives.sha512(clientFinished))
        var initMessage = ProtoUkey2ClientInit()
        initMessage.version = Ukey2Constants.version
        initMessage.random = Data(random)
        initMessage.cipherCommitments = [commitment]
        initMessage.nextProtocol = Ukey2Constants.nextProtocol
        let clientInit = Ukey2Envelope.wrap(.clientInit, Ukey2Envelope.serialize(initMessage))

        state = .awaitingServerInit(clientInit: clientInit, clientFinished: clientFinished)
        return clientInit
    }

    /// Handles the peer's ServerInit (or alert).
    public mutating func receive(_ bytes: some Collection<UInt8>) -> Ukey2Action {
        guard case .awaitingServerInit(let clientInit, let clientFinished) = state else {
            state = .finished
            return .fail(alert: nil, NearbyError(.outOfOrderApiCall, "UKEY2 client is not waiting for ServerInit"))
        }
        state = .finished
        let serverInitBytes = Array(bytes)
        guard let envelope = try? ProtoUkey2Message(serializedBytes: serverInitBytes) else {
            return Ukey2Envelope.failWithAlert(.badMessage, "Can't parse ServerInit envelope")
        }
        if envelope.messageType == .alert {
            return .fail(alert: nil, Ukey2Envelope.peerAlertError(envelope))
        }
        guard envelope.hasMessageType, envelope.messageType == .serverInit else {
            return Ukey2Envelope.failWithAlert(.badMessage, "Expected SERVER_INIT message type")
        }
        guard envelope.hasMessageData else {
            return Ukey2Envelope.failWithAlert(.badMessageData, "ServerInit envelope has no data")
        }
        guard let serverInit = try? ProtoUkey2ServerInit(serializedBytes: Array(envelope.messageData)) else {
            return Ukey2Envelope.failWithAlert(.badMessageData, "Can't parse ServerInit")
        }
        guard serverInit.hasVersion, serverInit.version == Ukey2Constants.version else {
            return Ukey2Envelope.failWithAlert(.badVersion, "ServerInit version missing or not 1")
        }
        guard serverInit.hasRandom, serverInit.random.count == Ukey2Constants.randomLength else {
            return Ukey2Envelope.failWithAlert(.badRandom, "ServerInit random missing or not 32 bytes")
        }
        guard serverInit.hasHandshakeCipher, serverInit.handshakeCipher == .p256Sha512 else {
            return Ukey2Envelope.failWithAlert(.badHandshakeCipher, "ServerInit handshake cipher is not P256_SHA512")
        }
        guard serverInit.hasPublicKey else {
            return Ukey2Envelope.failWithAlert(.badPublicKey, "ServerInit has no public key")
        }
        let peerKey: P256.KeyAgreement.PublicKey
        do {
            peerKey = try Ukey2PublicKeyCoding.decode(serverInit.publicKey)
        } catch {
            return .fail(alert: Ukey2Envelope.alert(.badPublicKey, error.message), error)
        }
        do {
            let x = try Ukey2HandshakeResult.sharedX(privateKey, peerKey)
            let result = Ukey2HandshakeResult(
                role: .client, clientInit: clientInit, serverInit: serverInitBytes, sharedSecretX: x)
            return .sendAndComplete(clientFinished, result)
        } catch {
            return .fail(alert: Ukey2Envelope.alert(.internalError, error.message), error)
        }
    }
}
