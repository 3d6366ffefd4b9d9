import Foundation
import NearbyAudio
import NearbyWire

/// The 8 random bytes a publication on the audio medium plays in a loop and also puts in its Wi-Fi LAN / BLE
/// advertisement, so that subscribers can tell which publication they hear (docs/AUDIO-MEDIUM.md).
package struct AudioToken: Sendable, Hashable, CustomStringConvertible {
    /// The token's length in bytes: `AudioModemConfiguration.standard.tokenLength` (8).
    package static let length = 8

    /// The bytes.
    package let bytes: [UInt8]

    /// A token of exactly ``length`` bytes, or `nil`.
    package init?(_ bytes: some Collection<UInt8>) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = Array(bytes)
    }

    /// A fresh random token (one per publication).
    package static func random() -> AudioToken {
        var generator = SystemRandomNumberGenerator()
        return AudioToken((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })!
    }

    /// Hex.
    package var description: String { bytes.map { String(format: "%02x", $0) }.joined() }
}

/// The audio tag: an envelope of kind 3 that prefixes a publication's advertisement with its audio token.
///
/// ```
/// 0      magic 0x4D ('M')
/// 1      0x13: version 1 (high nibble) | kind 3, audio-tagged (low nibble)
/// 2..9   the audio token (8 bytes)
/// 10..   the envelope the publication would advertise without audio (a message or a descriptor)
/// ```
package enum AudioTag {
    /// The kind (low nibble of byte 1) of an audio-tagged envelope.
    package static let kind: UInt8 = 3
    /// Bytes the tag adds in front of the envelope.
    package static let overhead = 2 + AudioToken.length

    /// The advertisement of `message`, tagged with `token` when there is one: the message itself when the whole
    /// fits in 131 bytes, otherwise its descriptor. Returns the inner envelope too (the caller serves descriptors).
    package static func advertisement(for message: Message, token: AudioToken?)
        -> (envelope: MessageEnvelope, bytes: [UInt8])
    {
        guard let token else {
            let envelope = MessageEnvelope.advertisement(for: message)
            return (envelope, envelope.bytes)
        }
        var envelope = MessageEnvelope.message(message)
        if envelope.bytes.count + overhead > MessageEnvelope.maximumEndpointInfoLength {
            envelope = .descriptor(MessageDescriptor(message))
        }
        return (envelope, tag(envelope.bytes, with: token))
    }

    /// `envelope` prefixed with the tag of `token`.
    package static func tag(_ envelope: [UInt8], with token: AudioToken) -> [UInt8] {
        [MessageEnvelope.magic, MessageEnvelope.version << 4 | kind] + token.bytes + envelope
    }

    /// Splits an advertisement into its audio token (if tagged) and the envelope bytes after the tag. Bytes that
    /// are not a tagged envelope come back whole, without a token.
    package static func split(_ advertisement: Data) -> (token: AudioToken?, envelope: Data) {
        let bytes = Array(advertisement)
        guard bytes.count >= overhead, bytes[0] == MessageEnvelope.magic,
            bytes[1] == MessageEnvelope.version << 4 | kind,
            let token = AudioToken(bytes[2..<overhead])
        else { return (nil, advertisement) }
        return (token, Data(bytes[overhead...]))
    }

    /// The PCM a publication plays in a loop for `token`: one modem frame, then `gap` of silence.
    package static func loop(for token: AudioToken, gap: Duration) throws -> [Float] {
        let configuration = AudioModemConfiguration.standard
        let frame = try AudioTokenEncoder(configuration: configuration).samples(for: token.bytes)
        let gapSamples = Int(gap / .milliseconds(1)) * configuration.sampleRate / 1000
        return frame + [Float](repeating: 0, count: max(0, gapSamples))
    }
}
