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

    /// Seals this side's messages with a given sequence number; the keys are immutable, so copies of it can
    /// seal on other threads (parallel sealing, see ``reserveSequenceNumber()``).
    package let sealer: D2DSealer
    private let receiveEncryptionKey: SymmetricKey
    private let receiveSigningKey: SymmetricKey

    /// Creates the channel for `role` from the UKEY2 next-protocol secret.
    package init(nextProtocolSecret: [UInt8], role: Ukey2Role) {
        self.role = role
        keys = D2DKeys(nextProtocolSecret: nextProtocolSecret)
        let send = role == .client ? keys.client : keys.server
        let receive = role == .client ? keys.server : keys.client
        sealer = D2DSealer(keys: send)
        receiveEncryptionKey = SymmetricKey(data: receive.encryptionKey)
        receiveSigningKey = SymmetricKey(data: receive.signingKey)
    }

    /// Encrypts and signs one message (a serialized `OfflineFrame`) as a serialized SecureMessage with the next
    /// sequence number (``D2DSealer/seal(_:sequence:iv:)``).
    /// - Parameter iv: a fixed 16-byte IV for known-answer tests; random when `nil`.
    package mutating func encode(_ message: some DataProtocol, iv: [UInt8]? = nil) throws(NearbyError) -> [UInt8] {
        let sequence = try nextSequenceNumber()
        let sealed = try sealer.seal(message, sequence: sequence, iv: iv)
        lastSentSequenceNumber = sequence
        return sealed
    }

    /// Takes the next outgoing sequence number for a message that ``sealer`` will seal (on any thread), as if it
    /// had been encoded here: the caller must write the sealed messages in the order of their numbers.
    /// - Throws: ``NearbyError/Code-swift.struct/sequenceMismatch`` once the numbers are exhausted.
    package mutating func reserveSequenceNumber() throws(NearbyError) -> Int32 {
        let sequence = try nextSequenceNumber()
        lastSentSequenceNumber = sequence
        return sequence
    }

    private func nextSequenceNumber() throws(NearbyError) -> Int32 {
        guard lastSentSequenceNumber < Int32.max else {
            throw NearbyError(.sequenceMismatch, "outgoing sequence numbers are exhausted")
        }
        return lastSentSequenceNumber + 1
    }

    /// Verifies, decrypts and sequence-checks one received SecureMessage; returns the carried message bytes.
    ///
    /// The layers are read as ranges of the received bytes (any field order, unknown fields skipped, as protobuf
    /// allows); the signature is checked over the exact `header_and_body` bytes before anything inside is read.
    /// - Throws: ``NearbyError/Code-swift.struct/malformedMessage`` for bytes that are not a SecureMessage,
    ///   ``NearbyError/Code-swift.struct/authenticationFailed`` for a bad signature, scheme, padding or metadata,
    ///   ``NearbyError/Code-swift.struct/sequenceMismatch`` for a replayed, skipped or reordered message.
    package mutating func decode(_ bytes: some Collection<UInt8>) throws(NearbyError) -> [UInt8] {
        Array(try decodeMessage(bytes))
    }

    /// ``decode(_:)`` without its last copy: the carried message as a slice of the decrypted body (the receive
    /// path hands it straight to the frame parser).
    package mutating func decodeMessage(_ bytes: some Collection<UInt8>) throws(NearbyError) -> Data {
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
        let message: Data
        switch inner[1] {
        case .bytes(let range):
            let start = plaintext.startIndex
            message = plaintext[(start + range.lowerBound)..<(start + range.upperBound)]
        case nil: message = Data()
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
