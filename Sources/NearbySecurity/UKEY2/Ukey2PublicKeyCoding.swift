import Crypto
import Foundation
import NearbyWire

/// Encodes and decodes P-256 public keys as `GenericPublicKey` protobufs.
///
/// Coordinates are big-endian two's-complement integers. We write the minimal magnitude with one `0x00` always in
/// front (so a coordinate whose high bit is set is never read as negative by Java peers). We read 1…33 bytes; a
/// 33-byte coordinate must start with `0x00`. A 32-byte coordinate with its high bit set, which a strict Java reader
/// would take as negative, is accepted as unsigned for interoperability with writers that omit the prefix. The
/// point must lie on P-256.
package enum Ukey2PublicKeyCoding {
    /// Serialized `GenericPublicKey{type: EC_P256, ec_p256_public_key{x, y}}` for `key`.
    package static func encode(_ key: P256.KeyAgreement.PublicKey) -> [UInt8] {
        let raw = Array(key.rawRepresentation)
        var ec = ProtoEcP256PublicKey()
        ec.x = Data(encodeCoordinate(raw[0..<32]))
        ec.y = Data(encodeCoordinate(raw[32..<64]))
        var generic = ProtoGenericPublicKey()
        generic.type = .ecP256
        generic.ecP256PublicKey = ec
        do {
            return try generic.serializedBytes()
        } catch {
            preconditionFailure("GenericPublicKey with all required fields failed to serialize: \(error)")
        }
    }

    /// The coordinate's minimal big-endian magnitude with a `0x00` byte prepended.
    package static func encodeCoordinate(_ coordinate: some Collection<UInt8>) -> [UInt8] {
        [0] + coordinate.drop(while: { $0 == 0 })
    }

    /// Parses serialized `GenericPublicKey` bytes into a P-256 public key.
    /// - Throws: `NearbyError.Code.handshakeFailed` when the bytes do not parse, the key is not EC
    ///   P-256, a coordinate has a bad length, or the point is not on the curve.
    package static func decode(_ bytes: some Collection<UInt8>) throws(NearbyError) -> P256.KeyAgreement.PublicKey {
        let generic: ProtoGenericPublicKey
        do {
            generic = try ProtoGenericPublicKey(serializedBytes: Array(bytes))
        } catch {
            throw NearbyError(.handshakeFailed, "public key is not a GenericPublicKey", cause: error)
        }
        guard generic.type == .ecP256, generic.hasEcP256PublicKey else {
            throw NearbyError(.handshakeFailed, "public key is not an EC P-256 key")
        }
        let x = try decodeCoordinate(Array(generic.ecP256PublicKey.x), name: "x")
        let y = try decodeCoordinate(Array(generic.ecP256PublicKey.y), name: "y")
        do {
            return try P256.KeyAgreement.PublicKey(rawRepresentation: x + y)
        } catch {
            throw NearbyError(.handshakeFailed, "public key point is not on P-256", cause: error)
        }
    }

    /// A coordinate as exactly 32 big-endian bytes, following the 1…33 byte rule.
    package static func decodeCoordinate(_ bytes: [UInt8], name: String) throws(NearbyError) -> [UInt8] {
        guard (1...33).contains(bytes.count) else {
            throw NearbyError(.handshakeFailed, "public key coordinate \(name) is \(bytes.count) bytes, not 1…33")
        }
        var magnitude = bytes[...]
        if bytes.count == 33 {
            guard bytes[0] == 0 else {
                throw NearbyError(.handshakeFailed, "33-byte public key coordinate \(name) does not start with 0x00")
            }
            magnitude = bytes.dropFirst()
        }
        return [UInt8](repeating: 0, count: 32 - magnitude.count) + magnitude
    }
}
