import Crypto
import Foundation
import NearbyWire

/// Seals messages for one direction of a D2D channel with a sequence number chosen by the caller.
///
/// The SecureMessage of one message does not depend on any other: each has a fresh random IV, and only the
/// sequence number inside the encrypted `DeviceToDeviceMessage` orders them. So messages can be sealed on several
/// threads at once, as long as the numbers are handed out in the order the messages will be written
/// (``D2DSecureChannel/reserveSequenceNumber()``) and every message is sealed with its own number. A value with
/// only immutable keys: copies seal independently, from any thread.
package struct D2DSealer: Sendable {
    private let encryptionKey: SymmetricKey
    private let signingKey: SymmetricKey

    /// A sealer with the AES-256 and HMAC-SHA256 keys of one direction.
    package init(keys: D2DKeys.Direction) {
        encryptionKey = SymmetricKey(data: keys.encryptionKey)
        signingKey = SymmetricKey(data: keys.signingKey)
    }

    /// Encrypts and signs `message` (a serialized `OfflineFrame`) as a serialized SecureMessage carrying `sequence`.
    ///
    /// The three protobuf layers are written directly into one output buffer (the same bytes SwiftProtobuf
    /// writes: fields in number order), so the message is copied once into the plaintext and the ciphertext once
    /// into the output.
    /// - Parameter iv: a fixed 16-byte IV for known-answer tests; random when `nil`.
    package func seal(_ message: some DataProtocol, sequence: Int32, iv: [UInt8]? = nil) throws(NearbyError) -> [UInt8] {
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
            key: encryptionKey, iv: iv, plaintext: plaintext, padded: true)

        // Header { 1: HMAC_SHA256, 2: AES_256_CBC, 5: iv, 6: GcmMetadata }
        let header: [UInt8] = [0x08, 0x01, 0x10, 0x02, 0x2A, 0x10] + iv
            + [0x32, UInt8(D2DSecureChannel.publicMetadata.count)] + D2DSecureChannel.publicMetadata
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
        let signature = HMAC<SHA256>.authenticationCode(for: output[headerAndBodyStart...], using: signingKey)
        output.append(0x12)
        output.append(UInt8(SHA256.byteCount))
        output.append(contentsOf: signature)
        return output
    }
}
