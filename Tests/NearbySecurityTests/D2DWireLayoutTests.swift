import Crypto
import Foundation
import NearbySecurity
import NearbyTestSupport
import NearbyWire
import SwiftProtobuf
import Testing
import _CryptoExtras

/// The channel writes and reads the SecureMessage layers by hand; these tests hold it to what a protobuf library
/// writes and accepts.
struct D2DWireLayoutTests {
    private func channels() throws -> (client: D2DSecureChannel, server: D2DSecureChannel) {
        let outcome = try HandshakeHarness.run()
        return (outcome.client.makeSecureChannel(), outcome.server.makeSecureChannel())
    }

    /// The SecureMessage SwiftProtobuf writes for `message` with the given keys, IV and sequence number.
    private func protobufEncode(
        _ message: [UInt8], sequence: Int32, iv: [UInt8], keys: D2DKeys.Direction, unknownFieldFirst: Bool = false
    ) throws -> [UInt8] {
        var inner = ProtoDeviceToDeviceMessage()
        inner.message = Data(message)
        inner.sequenceNumber = sequence
        let plaintext: [UInt8] = try inner.serializedBytes()
        let ciphertext = try AES._CBC.encrypt(
            plaintext, using: SymmetricKey(data: keys.encryptionKey), iv: try AES._CBC.IV(ivBytes: iv))
        var header = ProtoHeader()
        header.signatureScheme = .hmacSha256
        header.encryptionScheme = .aes256Cbc
        header.iv = Data(iv)
        header.publicMetadata = Data([0x08, 0x0D, 0x10, 0x01])
        var headerAndBody = ProtoHeaderAndBody()
        headerAndBody.header = header
        headerAndBody.body = ciphertext
        var headerAndBodyBytes: [UInt8] = try headerAndBody.serializedBytes()
        if unknownFieldFirst {
            // Field 9, varint 7, in front; then the known fields (protobuf readers must skip it).
            headerAndBodyBytes = [0x48, 0x07] + headerAndBodyBytes
        }
        var secure = ProtoSecureMessage()
        secure.headerAndBody = Data(headerAndBodyBytes)
        secure.signature = Data(HMAC<SHA256>.authenticationCode(
            for: headerAndBodyBytes, using: SymmetricKey(data: keys.signingKey)))
        return try secure.serializedBytes()
    }

    @Test("Encoding with a fixed IV gives exactly SwiftProtobuf's bytes", .timeLimit(.minutes(5)), arguments: [0, 1, 127, 128, 5_000, 65_536, 1_000_000])
    func encodeMatchesProtobuf(size: Int) throws {
        var (client, _) = try channels()
        var generator = SeededGenerator(seed: UInt64(size))
        let message = generator.bytes(size)
        let iv = generator.bytes(16)
        let ours = try client.encode(message, iv: iv)
        let expected = try protobufEncode(message, sequence: 1, iv: iv, keys: client.keys.client)
        #expect(ours == expected)
    }

    @Test("Decoding accepts SwiftProtobuf's bytes, also with an unknown field and with reordered fields", .timeLimit(.minutes(5)))
    func decodeAcceptsProtobufForms() throws {
        var (client, server) = try channels()
        let iv = [UInt8](repeating: 7, count: 16)
        let first = try protobufEncode(Array("one".utf8), sequence: 1, iv: iv, keys: client.keys.client)
        #expect(try server.decode(first) == Array("one".utf8))
        let second = try protobufEncode(Array("two".utf8), sequence: 2, iv: iv, keys: client.keys.client, unknownFieldFirst: true)
        #expect(try server.decode(second) == Array("two".utf8))
        // SecureMessage with signature before header_and_body.
        let third = try ProtoSecureMessage(serializedBytes: try protobufEncode(
            Array("three".utf8), sequence: 3, iv: iv, keys: client.keys.client))
        var reordered: [UInt8] = [0x12, UInt8(third.signature.count)] + third.signature
        reordered += [0x0A] + varint(third.headerAndBody.count) + third.headerAndBody
        #expect(try server.decode(reordered) == Array("three".utf8))
        #expect(server.lastReceivedSequenceNumber == 3)
    }

    @Test("Truncated, oversized-length and wrong-wire-type input is rejected without moving the counter", .timeLimit(.minutes(5)))
    func malformedOuterLayers() throws {
        var (client, server) = try channels()
        let good = try client.encode(Array("hello".utf8))
        let cases: [[UInt8]] = [
            [], [0x0A], [0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F], Array(good.dropLast()), [0x0B] + good,
            [0x08, 0x01], Array(repeating: 0xFF, count: 11), [0x00, 0x00],
        ]
        for bytes in cases {
            #expect(throws: NearbyError.self) { try server.decode(bytes) }
        }
        #expect(server.lastReceivedSequenceNumber == 0)
        #expect(try server.decode(good) == Array("hello".utf8))
    }

    private func varint(_ value: Int) -> [UInt8] {
        var value = UInt64(value)
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        return bytes + [UInt8(value)]
    }
}
