import Crypto
@testable import NearbySecurity
import NearbyWire

/// The D2D `SecureMessage` decoder, past the HMAC. The fuzz target knows the keys (derived from a fixed
/// next-protocol secret) and plays the client, so it can sign whatever the fuzzer chose:
/// - mode 0: the input as a raw `SecureMessage` (stops at the signature, as for a stranger);
/// - mode 1: length-prefixed messages, each sealed by a real client channel, one byte flipped at a chosen
///   place and decoded (must fail or yield the genuine message), then the genuine one (must round-trip);
/// - mode 2: the input as the signed `HeaderAndBody`, signed here;
/// - mode 3: the input as the `DeviceToDeviceMessage` plaintext (optionally with a fuzzed header), encrypted and
///   signed here, so the inner parser and sequence check see arbitrary decrypted bytes.
func fuzzSecureMessage(_ input: FuzzInput) {
    var input = input
    let mode = input.byte() % 4
    var receiver = SecureMessageFuzzKeys.receiver  // a copy: key derivation runs once per process
    switch mode {
    case 0:
        _ = try? receiver.decode(input.rest())
    case 1:
        var sender = SecureMessageFuzzKeys.sender
        var count = 0
        while !input.isAtEnd, count < 8 {
            count += 1
            let flipAt = Int(input.uint16())
            let flipMask = input.byte() | 1
            let message = input.chunk16()
            guard let sealed = try? sender.encode(message, iv: SecureMessageFuzzKeys.iv) else {
                fuzzCheck(false, "encode failed")
                return
            }
            var tampered = sealed
            tampered[flipAt % tampered.count] ^= flipMask
            if let opened = try? receiver.decode(tampered) {
                fuzzCheck(opened == message, "a tampered SecureMessage decoded to different bytes")
                continue
            }
            let opened = try? receiver.decode(sealed)
            fuzzCheck(opened == message, "a sealed message did not round-trip")
        }
    case 2:
        _ = try? receiver.decode(SecureMessageFuzzKeys.sign(headerAndBody: input.rest()))
    default:
        let customHeader = input.byte() & 1 == 1
        let header = customHeader ? input.chunk8() : SecureMessageFuzzKeys.standardHeader
        let plaintext = input.rest()
        guard
            let ciphertext = try? CryptoPrimitives.aesCBCEncrypt(
                key: SecureMessageFuzzKeys.clientEncryptionKey, iv: SecureMessageFuzzKeys.iv,
                plaintext: plaintext)
        else {
            fuzzCheck(false, "AES-CBC encryption failed")
            return
        }
        var headerAndBody: [UInt8] = []
        appendField(1, header, to: &headerAndBody)
        appendField(2, ciphertext, to: &headerAndBody)
        if let message = try? receiver.decode(SecureMessageFuzzKeys.sign(headerAndBody: headerAndBody)) {
            fuzzCheck(receiver.lastReceivedSequenceNumber == 1, "accepted a message with a wrong sequence number")
            fuzzCheck(message.count <= plaintext.count, "message longer than its plaintext")
        }
    }
}

enum SecureMessageFuzzKeys {
    static let secret = [UInt8](repeating: 0x5A, count: 32)
    static let keys = D2DKeys(nextProtocolSecret: secret)
    static let sender = D2DSecureChannel(nextProtocolSecret: secret, role: .client)
    static let receiver = D2DSecureChannel(nextProtocolSecret: secret, role: .server)
    static let clientEncryptionKey = SymmetricKey(data: keys.client.encryptionKey)
    static let clientSigningKey = SymmetricKey(data: keys.client.signingKey)
    static let iv = [UInt8](repeating: 0x42, count: 16)
    /// Header { 1: HMAC_SHA256, 2: AES_256_CBC, 5: iv, 6: public metadata (D2D, version 1) }, as a client writes it.
    static let standardHeader: [UInt8] =
        [0x08, 0x01, 0x10, 0x02, 0x2A, 0x10] + iv + [0x32, UInt8(D2DSecureChannel.publicMetadata.count)]
        + D2DSecureChannel.publicMetadata

    /// SecureMessage { 1: headerAndBody, 2: HMAC-SHA256(client signing key, headerAndBody) }.
    static func sign(headerAndBody: [UInt8]) -> [UInt8] {
        let signature = HMAC<SHA256>.authenticationCode(
            for: headerAndBody, using: clientSigningKey)
        var message: [UInt8] = []
        appendField(1, headerAndBody, to: &message)
        appendField(2, Array(signature), to: &message)
        return message
    }
}

/// Appends a length-delimited protobuf field.
func appendField(_ number: UInt8, _ value: [UInt8], to out: inout [UInt8]) {
    out.append(number << 3 | 2)
    var length = UInt64(value.count)
    while length >= 0x80 {
        out.append(UInt8(length & 0x7F) | 0x80)
        length >>= 7
    }
    out.append(UInt8(length))
    out += value
}
