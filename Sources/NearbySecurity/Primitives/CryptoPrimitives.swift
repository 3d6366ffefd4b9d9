import Crypto
import Foundation
import NearbyWire
import _CryptoExtras

/// The handful of cryptographic operations the protocol is built from, over byte arrays.
///
/// Thin wrappers over swift-crypto so that every derivation in UKEY2 and D2D reads like the protocol description.
package enum CryptoPrimitives {
    /// SHA-256 of `data`.
    package static func sha256(_ data: some DataProtocol) -> [UInt8] {
        Array(SHA256.hash(data: data))
    }

    /// SHA-512 of `data`.
    package static func sha512(_ data: some DataProtocol) -> [UInt8] {
        Array(SHA512.hash(data: data))
    }

    /// HMAC-SHA256 of `data` under `key`.
    package static func hmacSHA256(key: some ContiguousBytes, _ data: some DataProtocol) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: data, using: SymmetricKey(data: key)))
    }

    /// HKDF-SHA256 (RFC 5869): extract with `salt`, expand with `info` to `count` bytes.
    package static func hkdfSHA256(
        inputKeyMaterial: some ContiguousBytes, salt: some DataProtocol, info: some DataProtocol, count: Int = 32
    ) -> [UInt8] {
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: inputKeyMaterial), salt: salt, info: info, outputByteCount: count)
        return key.withUnsafeBytes { Array($0) }
    }

    /// AES-256-CBC encryption with PKCS#7 padding (always 1…16 pad bytes).
    package static func aesCBCEncrypt(key: SymmetricKey, iv: [UInt8], plaintext: some DataProtocol)
        throws(NearbyError) -> [UInt8]
    {
        do {
            let cbcIV = try AES._CBC.IV(ivBytes: iv)
            return Array(try AES._CBC.encrypt(plaintext, using: key, iv: cbcIV))
        } catch {
            throw NearbyError(.invalidArgument, "AES-CBC encryption failed", cause: error)
        }
    }

    /// AES-256-CBC decryption removing PKCS#7 padding.
    /// - Throws: ``NearbyError/Code-swift.struct/authenticationFailed`` when the ciphertext or padding is invalid.
    package static func aesCBCDecrypt(key: SymmetricKey, iv: [UInt8], ciphertext: some DataProtocol)
        throws(NearbyError) -> [UInt8]
    {
        guard iv.count == 16 else {
            throw NearbyError(.authenticationFailed, "AES-CBC IV is \(iv.count) bytes, not 16")
        }
        do {
            let cbcIV = try AES._CBC.IV(ivBytes: iv)
            return Array(try AES._CBC.decrypt(ciphertext, using: key, iv: cbcIV))
        } catch {
            throw NearbyError(.authenticationFailed, "AES-CBC decryption failed", cause: error)
        }
    }

    /// AES-256-CBC encryption with PKCS#7 padding, returning the ciphertext as `Data` (no extra copy).
    /// - Parameter padded: `plaintext` already ends with its PKCS#7 padding (so it is a whole number of blocks).
    static func aesCBCEncryptData(key: SymmetricKey, iv: [UInt8], plaintext: some DataProtocol, padded: Bool = false)
        throws(NearbyError) -> Data
    {
        do {
            return try AES._CBC.encrypt(plaintext, using: key, iv: try AES._CBC.IV(ivBytes: iv), noPadding: padded)
        } catch {
            throw NearbyError(.invalidArgument, "AES-CBC encryption failed", cause: error)
        }
    }

    /// AES-256-CBC decryption removing PKCS#7 padding, returning the plaintext as `Data` (no extra copy).
    /// - Throws: ``NearbyError/Code-swift.struct/authenticationFailed`` when the IV, ciphertext or padding is invalid.
    static func aesCBCDecryptData(key: SymmetricKey, iv: [UInt8], ciphertext: some DataProtocol)
        throws(NearbyError) -> Data
    {
        guard iv.count == 16 else {
            throw NearbyError(.authenticationFailed, "AES-CBC IV is \(iv.count) bytes, not 16")
        }
        do {
            return try AES._CBC.decrypt(ciphertext, using: key, iv: try AES._CBC.IV(ivBytes: iv))
        } catch {
            throw NearbyError(.authenticationFailed, "AES-CBC decryption failed", cause: error)
        }
    }

    /// Compares two byte strings in time that depends only on their lengths.
    package static func constantTimeEquals(_ lhs: some Collection<UInt8>, _ rhs: some Collection<UInt8>) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (left, right) in zip(lhs, rhs) {
            difference |= left ^ right
        }
        return difference == 0
    }

    /// `count` bytes from the system's cryptographically secure generator.
    package static func randomBytes(_ count: Int) -> [UInt8] {
        // Eight bytes per draw: each draw of the system generator is a getrandom(2) call.
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 7)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        bytes.removeLast(bytes.count - count)
        return bytes
    }
}
