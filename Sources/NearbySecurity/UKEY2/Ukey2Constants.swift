/// Fixed values of the UKEY2 handshake as Nearby Connections runs it.
package enum Ukey2Constants {
    /// The only protocol version: 1.
    package static let version: Int32 = 1
    /// Length of the ClientInit and ServerInit randoms.
    package static let randomLength = 32
    /// The protocol the handshake's secret is for.
    package static let nextProtocol = "AES_256_CBC-HMAC_SHA256"
    /// HKDF salt of the authentication (verification) string.
    package static let authStringSalt = Array("UKEY2 v1 auth".utf8)
    /// HKDF salt of the next-protocol secret.
    package static let nextSecretSalt = Array("UKEY2 v1 next".utf8)
    /// Length of the authentication string Nearby asks for.
    package static let authStringLength = 32
}
