import Crypto
import Foundation
import NearbyWire

/// The keys of a D2D (device-to-device) secure channel, derived from the UKEY2 next-protocol secret.
///
/// The client key and server key are HKDF-SHA256(next secret, salt SHA-256("D2D"), info "client" / "server").
/// Each of them yields an AES-256 key (info "ENC:2") and an HMAC-SHA256 key (info "SIG:1") under salt
/// SHA-256("SecureMessage"). The initiator encodes with the client keys and decodes with the server keys; the
/// responder the reverse.
package struct D2DKeys: Sendable, Hashable {
    /// The AES and HMAC keys of one direction.
    package struct Direction: Sendable, Hashable {
        /// The D2D key this direction's keys come from.
        package let baseKey: [UInt8]
        /// The AES-256-CBC key.
        package let encryptionKey: [UInt8]
        /// The HMAC-SHA256 key.
        package let signingKey: [UInt8]

        init(baseKey: [UInt8]) {
            self.baseKey = baseKey
            encryptionKey = CryptoPrimitives.hkdfSHA256(
                inputKeyMaterial: baseKey, salt: D2DKeys.secureMessageSalt, info: Array("ENC:2".utf8))
            signingKey = CryptoPrimitives.hkdfSHA256(
                inputKeyMaterial: baseKey, salt: D2DKeys.secureMessageSalt, info: Array("SIG:1".utf8))
        }
    }

    /// SHA-256("D2D"), the salt of the client and server keys.
    package static let d2dSalt = CryptoPrimitives.sha256(Array("D2D".utf8))
    /// SHA-256("SecureMessage"), the salt of the encryption and signing keys.
    package static let secureMessageSalt = CryptoPrimitives.sha256(Array("SecureMessage".utf8))

    /// Keys for messages the client (initiator) sends.
    package let client: Direction
    /// Keys for messages the server (responder) sends.
    package let server: Direction

    /// Derives every key from the 32-byte next-protocol secret.
    package init(nextProtocolSecret: [UInt8]) {
        client = Direction(
            baseKey: CryptoPrimitives.hkdfSHA256(
                inputKeyMaterial: nextProtocolSecret, salt: D2DKeys.d2dSalt, info: Array("client".utf8)))
        server = Direction(
            baseKey: CryptoPrimitives.hkdfSHA256(
                inputKeyMaterial: nextProtocolSecret, salt: D2DKeys.d2dSalt, info: Array("server".utf8)))
    }
}
