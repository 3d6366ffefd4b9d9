import Crypto
import Foundation
import NearbyWire

/// Which end of the handshake this side is.
package enum Ukey2Role: Sendable, Hashable {
    /// The initiator: the side that opened the socket and sent ClientInit.
    case client
    /// The responder: the side that accepted the socket and sent ServerInit.
    case server
}

/// The outcome of a completed UKEY2 handshake: the shared secrets and what people compare to verify them.
package struct Ukey2HandshakeResult: Sendable, Hashable {
    /// This side's role.
    package let role: Ukey2Role
    /// The serialized ClientInit envelope (M1), without its length prefix.
    package let clientInit: [UInt8]
    /// The serialized ServerInit envelope (M2), without its length prefix.
    package let serverInit: [UInt8]
    /// The 32-byte authentication string both sides derive: HKDF-SHA256(DHS, "UKEY2 v1 auth", M1‖M2).
    package let authString: [UInt8]
    /// The 32-byte next-protocol secret: HKDF-SHA256(DHS, "UKEY2 v1 next", M1‖M2).
    package let nextProtocolSecret: [UInt8]

    /// Derives the secrets from the ECDH result.
    /// - Parameters:
    ///   - sharedSecretX: the 32-byte x-coordinate of the ECDH shared point.
    init(role: Ukey2Role, clientInit: [UInt8], serverInit: [UInt8], sharedSecretX: [UInt8]) {
        self.role = role
        self.clientInit = clientInit
        self.serverInit = serverInit
        let dhs = CryptoPrimitives.sha256(sharedSecretX)
        let info = clientInit + serverInit
        authString = CryptoPrimitives.hkdfSHA256(
            inputKeyMaterial: dhs, salt: Ukey2Constants.authStringSalt, info: info,
            count: Ukey2Constants.authStringLength)
        nextProtocolSecret = CryptoPrimitives.hkdfSHA256(
            inputKeyMaterial: dhs, salt: Ukey2Constants.nextSecretSalt, info: info)
    }

    /// The 4-digit code Android shows (`getAuthenticationDigits`).
    package var verificationDigits: String { VerificationCodes.digits(from: authString) }

    /// The 5-character token Google's Swift API shows.
    package var verificationToken: String { VerificationCodes.token(from: authString) }

    /// The encrypted channel keyed by this handshake, for this side's role.
    package func makeSecureChannel() -> D2DSecureChannel {
        D2DSecureChannel(nextProtocolSecret: nextProtocolSecret, role: role)
    }

    static func sharedX(
        _ privateKey: P256.KeyAgreement.PrivateKey, _ peer: P256.KeyAgreement.PublicKey
    ) throws(NearbyError) -> [UInt8] {
        do {
            let secret = try privateKey.sharedSecretFromKeyAgreement(with: peer)
            return secret.withUnsafeBytes { Array($0) }
        } catch {
            throw NearbyError(.handshakeFailed, "ECDH key agreement failed", cause: error)
        }
    }
}
