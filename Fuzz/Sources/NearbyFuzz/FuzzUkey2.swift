import Crypto
import Foundation
@testable import NearbySecurity
import NearbyWire

/// Fixed keys and randoms, so a crashing input reproduces exactly.
enum FuzzKeys {
    static let server = try! P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x11, count: 32))
    static let client = try! P256.KeyAgreement.PrivateKey(rawRepresentation: [UInt8](repeating: 0x22, count: 32))
    static let random = [UInt8](repeating: 0x33, count: Ukey2Constants.randomLength)

    /// A well-formed `ClientInit` envelope that commits to `clientFinished`, so the fuzzer's `ClientFinished`
    /// passes the commitment check and reaches the key decoding and agreement.
    static func clientInit(committingTo clientFinished: [UInt8]) -> [UInt8] {
        var commitment = ProtoUkey2ClientInit.CipherCommitment()
        commitment.handshakeCipher = .p256Sha512
        commitment.commitment = Data(CryptoPrimitives.sha512(clientFinished))
        var message = ProtoUkey2ClientInit()
        message.version = Ukey2Constants.version
        message.random = Data(random)
        message.cipherCommitments = [commitment]
        message.nextProtocol = Ukey2Constants.nextProtocol
        return Ukey2Envelope.wrap(.clientInit, Ukey2Envelope.serialize(message))
    }
}

/// The UKEY2 responder (the side that receives a connection): mode 0 feeds the input as `ClientInit` (and, if that
/// is accepted, the rest as `ClientFinished`); mode 1 feeds a valid `ClientInit` committing to the input, then the
/// input as `ClientFinished`. Alerts are reached through the envelope's message type in either message.
func fuzzUkey2Server(_ input: FuzzInput) {
    var input = input
    let mode = input.byte() % 2
    var server = Ukey2Server(privateKey: FuzzKeys.server, random: FuzzKeys.random)
    switch mode {
    case 0:
        let clientInit = input.chunk16()
        let first = server.receive(clientInit)
        guard case .send(let serverInit) = first else {
            expectHandshakeFailure(first)
            return
        }
        fuzzCheck(!serverInit.isEmpty, "empty ServerInit")
        expectHandshakeFailure(server.receive(input.rest()))
    default:
        let clientFinished = input.rest()
        guard case .send = server.receive(FuzzKeys.clientInit(committingTo: clientFinished)) else {
            fuzzCheck(false, "a valid ClientInit was refused")
            return
        }
        switch server.receive(clientFinished) {
        case .complete(let result):
            fuzzCheck(result.role == .server && result.authString.count == Ukey2Constants.authStringLength, "bad result")
            _ = result.makeSecureChannel()
        case .fail:
            break
        case .send, .sendAndComplete:
            fuzzCheck(false, "server answered a ClientFinished")
        }
    }
    // Whatever happened, the handshake is over.
    guard case .fail = server.receive([]) else {
        fuzzCheck(false, "server accepted a message after the handshake")
        return
    }
}

/// The UKEY2 initiator: after a real `start()`, the input is the peer's `ServerInit` (or alert).
func fuzzUkey2Client(_ input: FuzzInput) {
    var client = Ukey2Client(privateKey: FuzzKeys.client, random: FuzzKeys.random)
    guard (try? client.start()) != nil else {
        fuzzCheck(false, "client did not start")
        return
    }
    switch client.receive(input.bytes) {
    case .sendAndComplete(let clientFinished, let result):
        fuzzCheck(!clientFinished.isEmpty && result.role == .client, "bad client completion")
        fuzzCheck(result.authString.count == Ukey2Constants.authStringLength, "bad auth string")
        _ = result.makeSecureChannel()
    case .fail:
        break
    case .send, .complete:
        fuzzCheck(false, "client answered ServerInit without completing")
    }
    guard case .fail = client.receive(input.bytes) else {
        fuzzCheck(false, "client accepted a message after the handshake")
        return
    }
}

private func expectHandshakeFailure(_ action: Ukey2Action) {
    switch action {
    case .fail: break
    case .complete(let result): fuzzCheck(result.role == .server, "server completed as a client")
    case .send, .sendAndComplete: fuzzCheck(false, "unexpected UKEY2 server step")
    }
}
