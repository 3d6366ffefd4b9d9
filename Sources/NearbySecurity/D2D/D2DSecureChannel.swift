import Crypto
import Foundation
import NearbyWire
import SwiftProtobuf

/// The encrypted channel of a connected endpoint: SecureMessage with AES-256-CBC and HMAC-SHA256 around
/// DeviceToDeviceMessage, with strict per-direction sequence numbers.
///
/// A value type with no I/O: it holds keys and both counters, so the same channel continues on a new socket after
/// a bandwidth upgrade simply by being used there. The first message in each direction carries sequence number 1;
/// a received message must carry exactly the previous number plus one (replays, gaps and reordering are errors).
/// A failed decode leaves the counters unchanged; the endpoint should then be dropped.
public struct D2DSecureChannel: Sendable {
    /// GcmMetadata{type: DEVICE_TO_DEVICE_MESSAGE (13), version: 1} as bytes.
    public static let publicMetadata: [UInt8] = [0x08, 0x0D, 0x10, 0x01]

    /// This side's role in the handshake that keyed the channel.
    public let role: Ukey2Role
    /// All keys of the channel.
    public let keys: D2DKeys
    /// The sequence number of the last message encoded (0 before the first).
    public private(set) var lastSentSequenceNumber: Int32 = 0
    /// The sequence number of the last message decoded (0 before the first).
    public private(set) var lastReceivedSequenceNumber: Int32 = 0

    private let sendEncryptionKey: SymmetricKey
    private let sendSigningKey: SymmetricKey
    private let receiveEncryptionKey: SymmetricKey
    private let receiveSigningKey: SymmetricKey

    /// Creates the channel for `role` from the UKEY2 next-protocol secret.
    public init(nextProtocolSecret: [UInt8], role: Ukey2Role) {
        self.role = role
        keys = D2DKeys(nextProtocolSecret: nextProtocolSecret)
        let send = role == .client ? keys.client : keys.server
        let receive = role == .client ? keys.server : keys.client
        sendEncryptionKey = SymmetricKey(data: send.encryptionKey)
        sendSigningKey = SymmetricKey(data: send.signingKey)
        receiveEncryptionKey = SymmetricKey(data: receive.encryptionKey)
        receiveSigningKey = SymmetricKey(data: receive.signingKey)
    }

    /// Encrypts and signs one message (a serialized `OfflineFrame`) as a serialized SecureMessage.
    /// - Parameter iv: a fixed 16-byte IV for known-answer tests; random when `nil`.
    public mutating func encode(_ message: some DataProtocol, iv: [UInt8]? = nil) throws(NearbyError) -> [UInt8] {
        guard lastSentSequenceNumber < Int32.max else {
            throw NearbyError(.sequenceMismatch, "outgoing sequence numbers are exhausted")
        }
        let sequence = lastSentSequenceNumber + 1
        var inner = ProtoDeviceToDeviceMessage()
        inner.message = Data(message)
        inner.sequenceNumber = sequence
        let plaintext: [UInt8] = try serialize(inner)

        let iv = iv ?? CryptoPrimitives.randomBytes(16)
        let ciphertext = try CryptoPrimitives.aesCBCEncrypt(key: sendEncryptionKey, iv: iv, plaintext: plaintext)

        var header = ProtoHeader()
        header.signatureScheme = .hmacSha256
        header.encryptionScheme = .aes256Cbc
        header.iv = Data(iv)
        header.publicMetadata = Data(Self.publicMetadata)
        var headerAndBody = ProtoHeaderAndBody()
        headerAndBody.header = header
        headerAndBody.body = Data(ciphertext)
        let headerAndBodyBytes: [UInt8] = try serialize(headerAndBody)

        var secure = ProtoSecureMessage()
        secure.headerAndBody = Data(headerAndBodyBytes)
        secure.signature = Data(HMAC<SHA256>.authenticationCode(for: headerAndBodyBytes, using: sendSigningKey))
        let bytes: [UInt8] = try serialize(secure)
        lastSentSequenceNumber = sequence
        return bytes
    }

    /// Verifies, decrypts and sequence-checks one received SecureMessage; returns the carried message bytes.
    /// - Throws: ``NearbyError/Code-swift.struct/malformedMessage`` for bytes that are not a SecureMessage,
    ///   ``NearbyError/Code-swift.struct/authenticationFailed`` for a bad signature, scheme, padding or metadata,
    ///   ``NearbyError/Code-swift.struct/sequenceMismatch`` for a replayed, skipped or reordered message.
    public mutating func decode(_ bytes: some Collection<UInt8>) throws(NearbyError) -> [UInt8] {
        let secure: ProtoSecureMessage
        do {
            secure = try ProtoSecureMessage(serializedBytes: Array(bytes))
        } catch {
            throw NearbyError(.malformedMessage, "bytes are not a SecureMessage", cause: error)
        }
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                secure.signature, authenticating: secure.headerAndBody, using: receiveSigningKey)
        else {
            throw NearbyError(.authenticationFailed, "SecureMessage signature does not verify")
        }
        let headerAndBody: ProtoHeaderAndBody
        do {
            headerAndBody = try ProtoHeaderAndBody(serializedBytes: secure.headerAndBody)
        } catch {
            throw NearbyError(.authenticationFailed, "signed HeaderAndBody does not parse", cause: error)
        }
        let header = headerAndBody.header
        guard header.signatureScheme == .hmacSha256, header.encryptionScheme == .aes256Cbc else {
            throw NearbyError(.authenticationFailed, "SecureMessage uses unsupported schemes")
        }
        try Self.checkPublicMetadata(header)
        let plaintext = try CryptoPrimitives.aesCBCDecrypt(
            key: receiveEncryptionKey, iv: Array(header.iv), ciphertext: headerAndBody.body)
        let inner: ProtoDeviceToDeviceMessage
        do {
            inner = try ProtoDeviceToDeviceMessage(serializedBytes: plaintext)
        } catch {
            throw NearbyError(.authenticationFailed, "decrypted body is not a DeviceToDeviceMessage", cause: error)
        }
        let expected = lastReceivedSequenceNumber &+ 1
        guard inner.hasSequenceNumber, inner.sequenceNumber == expected, expected > 0 else {
            throw NearbyError(
                .sequenceMismatch,
                "expected sequence number \(expected), got \(inner.hasSequenceNumber ? "\(inner.sequenceNumber)" : "none")")
        }
        lastReceivedSequenceNumber = expected
        return Array(inner.message)
    }

    static func checkPublicMetadata(_ header: ProtoHeader) throws(NearbyError) {
        guard header.hasPublicMetadata,
            let metadata = try? ProtoGcmMetadata(serializedBytes: header.publicMetadata),
            metadata.type == .deviceToDeviceMessage, metadata.version <= 1
        else {
            throw NearbyError(.authenticationFailed, "SecureMessage metadata is not a D2D message of version 1")
        }
    }

    private func serialize(_ message: some SwiftProtobuf.Message) throws(NearbyError) -> [UInt8] {
        do {
            return try message.serializedBytes()
        } catch {
            throw NearbyError(.unknown, "SecureMessage serialization failed", cause: error)
        }
    }
}
