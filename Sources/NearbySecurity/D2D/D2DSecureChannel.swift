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
///
/// Public only because the public `ConnectionStateMachine.Action` names it; its members are `package`.
public struct D2DSecureChannel: Sendable {
    /// GcmMetadata{type: DEVICE_TO_DEVICE_MESSAGE (13), version: 1} as bytes.
    package static let publicMetadata: [UInt8] = [0x08, 0x0D, 0x10, 0x01]

    /// This side's role in the handshake that keyed the channel.
    package let role: Ukey2Role
    /// All keys of the channel.
    package let keys: D2DKeys
    /// The sequence number of the last message encoded (0 before the first).
    package private(set) var lastSentSequenceNumber: Int32 = 0
    /// The sequence number of the last message decoded (0 before the first).
    package private(set) var lastReceivedSequenceNumber: Int32 = 0

    private let sendEncryptionKey: SymmetricKey
    private let sendSigningKey: SymmetricKey
    private let receiveEncryptionKey: SymmetricKey
    private let receiveSigningKey: SymmetricKey

    /// Creates the channel for `role` from the UKEY2 next-protocol secret.
    package init(nextProtocolSecret: [UInt8], role: Ukey2Role) {
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
    ///
    /// The three protobuf layers are written directly into one output buffer (the same bytes SwiftProtobuf
    /// writes: fields in number order), so the message is copied once into the plaintext and the ciphertext once
    /// into the output.
    /// - Parameter iv: a fixed 16-byte IV for known-answer tests; random when `nil`.
    package mutating func encode(_ message: some DataProtocol, iv: [UInt8]? = nil) throws(NearbyError) -> [UInt8] {
        guard lastSentSequenceNumber < Int32.max else {
            throw NearbyError(.sequenceMismatch, "outgoing sequence numbers are exhausted")
        }
        let sequence = lastSentSequenceNumber + 1
        // DeviceToDeviceMessage { 1: message, 2: sequence_number }, then PKCS#7 padding, in one buffer of the
        // final size: the cipher then runs without padding and copies the plaintext once instead of growing it.
        let sequenceVarint = UInt64(bitPattern: Int64(sequence))
        let plaintextLength = 1 + ProtobufWireScanner.varintLength(UInt64(message.count)) + message.count
            + 1 + ProtobufWireScanner.varintLength(sequenceVarint)
        let padding = 16 - plaintextLength % 16
        var plaintext: [UInt8] = []
        plaintext.reserveCapacity(plaintextLength + padding)
        plaintext.append(0x0A)
        ProtobufWireScanner.appendVarint(UInt64(message.count), to: &plaintext)
        plaintext.append(contentsOf: message)
        plaintext.append(0x10)
        ProtobufWireScanner.appendVarint(sequenceVarint, to: &plaintext)
        plaintext.append(contentsOf: repeatElement(UInt8(padding), count: padding))

        let iv = iv ?? CryptoPrimitives.randomBytes(16)
        guard iv.count == 16 else { throw NearbyError(.invalidArgument, "AES-CBC IV is \(iv.count) bytes, not 16") }
        let ciphertext = try CryptoPrimitives.aesCBCEncryptData(
            key: sendEncryptionKey, iv: iv, plaintext: plaintext, padded: true)

        // Header { 1: HMAC_SHA256, 2: AES_256_CBC, 5: iv, 6: GcmMetadata }
        let header: [UInt8] = [0x08, 0x01, 0x10, 0x02, 0x2A, 0x10] + iv + [0x32, UInt8(Self.publicMetadata.count)]
            + Self.publicMetadata
        // HeaderAndBody { 1: header, 2: body }
        let headerAndBodyLength = 1 + ProtobufWireScanner.varintLength(UInt64(header.count)) + header.count
            + 1 + ProtobufWireScanner.varintLength(UInt64(ciphertext.count)) + ciphertext.count
        // SecureMessage { 1: header_and_body, 2: signature (32 bytes) }
        var output: [UInt8] = []
        output.reserveCapacity(headerAndBodyLength + 48)
        output.append(0x0A)
        ProtobufWireScanner.appendVarint(UInt64(headerAndBodyLength), to: &output)
        let headerAndBodyStart = output.count
        output.append(0x0A)
        ProtobufWireScanner.appendVarint(UInt64(header.count), to: &output)
        output.append(contentsOf: header)
        output.append(0x12)
        ProtobufWireScanner.appendVarint(UInt64(ciphertext.count), to: &output)
        output.append(contentsOf: ciphertext)
        let signature = HMAC<SHA256>.authenticationCode(
            for: output[headerAndBodyStart...], using: sendSigningKey)
        output.append(0x12)
        output.append(UInt8(SHA256.byteCount))
        output.append(contentsOf: signature)
        lastSentSequenceNumber = sequence
        return output
    }

    /// Verifies, decrypts and sequence-checks one received SecureMessage; returns the carried message bytes.
    ///
    /// The layers are read as ranges of the received bytes (any field order, unknown fields skipped, as protobuf
    /// allows); the signature is checked over the exact `header_and_body` bytes before anything inside is read.
    /// - Throws: ``NearbyError/Code-swift.struct/malformedMessage`` for bytes that are not a SecureMessage,
    ///   ``NearbyError/Code-swift.struct/authenticationFailed`` for a bad signature, scheme, padding or metadata,
    ///   ``NearbyError/Code-swift.struct/sequenceMismatch`` for a replayed, skipped or reordered message.
    package mutating func decode(_ bytes: some Collection<UInt8>) throws(NearbyError) -> [UInt8] {
        let received = bytes as? [UInt8] ?? Array(bytes)
        let outer: [ProtobufWireScanner.Value?]
        do {
            outer = try received.withUnsafeBytes { buffer throws(NearbyError) in
                try ProtobufWireScanner.scan(buffer, maxField: 2)
            }
        } catch {
            throw NearbyError(.malformedMessage, "bytes are not a SecureMessage", cause: error)
        }
        guard case .bytes(let headerAndBodyRange) = outer[1], case .bytes(let signatureRange) = outer[2] else {
            throw NearbyError(.malformedMessage, "bytes are not a SecureMessage: header_and_body or signature missing")
        }
        let headerAndBody = received[headerAndBodyRange]
        guard
            HMAC<SHA256>.isValidAuthenticationCode(
                received[signatureRange], authenticating: headerAndBody, using: receiveSigningKey)
        else {
            throw NearbyError(.authenticationFailed, "SecureMessage signature does not verify")
        }
        let layers: [ProtobufWireScanner.Value?]
        do {
            layers = try headerAndBody.withUnsafeBytes { buffer throws(NearbyError) in
                try ProtobufWireScanner.scan(buffer, maxField: 2)
            }
        } catch {
            throw NearbyError(.authenticationFailed, "signed HeaderAndBody does not parse", cause: error)
        }
        guard case .bytes(let headerRange) = layers[1], case .bytes(let bodyRange) = layers[2] else {
            throw NearbyError(.authenticationFailed, "signed HeaderAndBody lacks its header or body")
        }
        let base = headerAndBodyRange.lowerBound
        let header: ProtoHeader
        do {
            header = try ProtoHeader(serializedBytes: Array(received[(base + headerRange.lowerBound)..<(base + headerRange.upperBound)]))
        } catch {
            throw NearbyError(.authenticationFailed, "signed header does not parse", cause: error)
        }
        guard header.signatureScheme == .hmacSha256, header.encryptionScheme == .aes256Cbc else {
            throw NearbyError(.authenticationFailed, "SecureMessage uses unsupported schemes")
        }
        try Self.checkPublicMetadata(header)
        let plaintext = try CryptoPrimitives.aesCBCDecryptData(
            key: receiveEncryptionKey, iv: Array(header.iv),
            ciphertext: received[(base + bodyRange.lowerBound)..<(base + bodyRange.upperBound)])
        let inner: [ProtobufWireScanner.Value?]
        do {
            inner = try plaintext.withUnsafeBytes { buffer throws(NearbyError) in
                try ProtobufWireScanner.scan(buffer, maxField: 2)
            }
        } catch {
            throw NearbyError(.authenticationFailed, "decrypted body is not a DeviceToDeviceMessage", cause: error)
        }
        let expected = lastReceivedSequenceNumber &+ 1
        var sequenceNumber: Int32?
        switch inner[2] {
        case .varint(let value): sequenceNumber = Int32(truncatingIfNeeded: value)
        case nil: sequenceNumber = nil
        default: throw NearbyError(.authenticationFailed, "decrypted sequence_number has the wrong wire type")
        }
        guard let sequenceNumber, sequenceNumber == expected, expected > 0 else {
            throw NearbyError(
                .sequenceMismatch,
                "expected sequence number \(expected), got \(sequenceNumber.map { "\($0)" } ?? "none")")
        }
        let message: [UInt8]
        switch inner[1] {
        case .bytes(let range):
            let start = plaintext.startIndex
            message = Array(plaintext[(start + range.lowerBound)..<(start + range.upperBound)])
        case nil: message = []
        default: throw NearbyError(.authenticationFailed, "decrypted message has the wrong wire type")
        }
        lastReceivedSequenceNumber = expected
        return message
    }

    static func checkPublicMetadata(_ header: ProtoHeader) throws(NearbyError) {
        guard header.hasPublicMetadata,
            let metadata = try? ProtoGcmMetadata(serializedBytes: header.publicMetadata),
            metadata.type == .deviceToDeviceMessage, metadata.version <= 1
        else {
            throw NearbyError(.authenticationFailed, "SecureMessage metadata is not a D2D message of version 1")
        }
    }
}
