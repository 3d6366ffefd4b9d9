import Crypto

/// SHA-256 for the wire layer's short identifiers, computed by swift-crypto.
///
/// The wire layer needs SHA-256 only to derive short identifiers (service-ID hashes, BLE device tokens,
/// advertisement hashes, message digests). This type keeps the byte-array shape those call sites use on top of
/// swift-crypto's `SHA256`.
///
/// Hash in one call with ``hash(_:)``, or feed data in pieces with ``update(_:)`` and finish with
/// ``finalize()``:
///
/// ```swift
/// let digest = SHA256Digest.hash(Array("abc".utf8))   // 32 bytes, ba7816bf…
/// ```
package struct SHA256Digest: Sendable {
    /// The length of a SHA-256 digest in bytes.
    package static let byteCount = SHA256.byteCount

    /// The length of one SHA-256 message block in bytes.
    package static let blockByteCount = SHA256.blockByteCount

    private var hasher = SHA256()

    /// Creates a hasher with nothing fed to it yet.
    package init() {}

    /// Returns the SHA-256 digest (32 bytes) of `bytes`.
    package static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = SHA256Digest()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Returns the SHA-256 digest (32 bytes) of the UTF-8 encoding of `string`.
    package static func hash(utf8 string: String) -> [UInt8] {
        hash(Array(string.utf8))
    }

    /// Feeds more message bytes to the hasher.
    package mutating func update(_ bytes: some Sequence<UInt8>) {
        hasher.update(data: Array(bytes))
    }

    /// Returns the 32-byte digest of everything fed so far.
    ///
    /// The hasher is consumed: call this once, on a copy if you need to continue.
    package consuming func finalize() -> [UInt8] {
        Array(hasher.finalize())
    }
}
