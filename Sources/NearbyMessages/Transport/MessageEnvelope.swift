import Foundation
import NearbyWire

/// The bytes a publication advertises (in the endpoint info) and sends (as a BYTES payload). Documented with its
/// byte layout in `docs/MESSAGES.md`.
///
/// ```
/// 0      magic 0x4D ('M')
/// 1      version (high nibble, 1) | kind (low nibble): 0 message, 1 descriptor, 2 fetch request
/// message:     2 nsLen, ns (UTF-8), typeLen, type (UTF-8), content (the rest)
/// descriptor:  2 nsLen, ns, typeLen, type, content length (u32 BE), first 8 bytes of SHA-256(content)
/// fetch:       nothing more
/// ```
package enum MessageEnvelope: Sendable, Hashable {
    /// A whole message: in the endpoint info when it fits in 131 bytes, otherwise as the payload of a fetch.
    case message(Message)
    /// A message too large for the endpoint info: its labels, size and digest; the subscriber fetches the rest.
    case descriptor(MessageDescriptor)
    /// The endpoint info a subscriber connects with to fetch a large message.
    case fetchRequest

    /// The first byte of every envelope.
    package static let magic: UInt8 = 0x4D
    /// The envelope version this code writes and reads.
    package static let version: UInt8 = 1
    /// The largest endpoint info Nearby Connections carries.
    package static let maximumEndpointInfoLength = 131
    /// Bytes of a SHA-256 kept in a descriptor.
    package static let digestLength = 8

    enum Kind: UInt8 {
        case message = 0
        case descriptor = 1
        case fetchRequest = 2
    }

    /// The encoded bytes.
    package var bytes: [UInt8] {
        switch self {
        case .message(let message):
            var out = Self.header(.message)
            Self.appendLabels(message.namespace, message.type, to: &out)
            out += message.content
            return out
        case .descriptor(let descriptor):
            var out = Self.header(.descriptor)
            Self.appendLabels(descriptor.namespace, descriptor.type, to: &out)
            let length = UInt32(descriptor.contentLength)
            out += [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
            out += descriptor.digest
            return out
        case .fetchRequest:
            return Self.header(.fetchRequest)
        }
    }

    /// What a publication advertises for `message`: the message itself when it fits in 131 bytes, otherwise its
    /// descriptor.
    package static func advertisement(for message: Message) -> MessageEnvelope {
        let inline = MessageEnvelope.message(message)
        if inline.bytes.count <= maximumEndpointInfoLength { return inline }
        return .descriptor(MessageDescriptor(message))
    }

    /// Decodes an envelope.
    /// - Throws: `NearbyError` with code `.invalidAdvertisement` when the bytes are not an envelope of this version.
    package static func decode(_ bytes: some Collection<UInt8>) throws(NearbyError) -> MessageEnvelope {
        var reader = ByteReader(bytes, context: "message envelope", code: .invalidAdvertisement)
        guard try reader.readByte("magic") == magic else { throw NearbyError(.invalidAdvertisement, "not a message envelope") }
        let versionAndKind = try reader.readByte("version and kind")
        guard versionAndKind >> 4 == version else {
            throw NearbyError(.invalidAdvertisement, "message envelope version \(versionAndKind >> 4) is not supported")
        }
        guard let kind = Kind(rawValue: versionAndKind & 0x0F) else {
            throw NearbyError(.invalidAdvertisement, "unknown message envelope kind \(versionAndKind & 0x0F)")
        }
        switch kind {
        case .fetchRequest:
            return .fetchRequest
        case .message:
            let namespace = try reader.readLabel("namespace")
            let type = try reader.readLabel("type")
            return .message(Message(content: Data(reader.readRest()), namespace: namespace, type: type))
        case .descriptor:
            let namespace = try reader.readLabel("namespace")
            let type = try reader.readLabel("type")
            let length = Int(try reader.readUInt32BigEndian("content length"))
            let digest = try reader.readBytes(digestLength, "digest")
            guard reader.remaining == 0 else { throw NearbyError(.invalidAdvertisement, "trailing bytes after a descriptor") }
            guard length <= Message.maximumContentSize else {
                throw NearbyError(.invalidAdvertisement, "descriptor announces \(length) bytes, over the maximum")
            }
            return .descriptor(MessageDescriptor(namespace: namespace, type: type, contentLength: length, digest: digest))
        }
    }

    private static func header(_ kind: Kind) -> [UInt8] { [magic, version << 4 | kind.rawValue] }

    private static func appendLabels(_ namespace: String, _ type: String, to out: inout [UInt8]) {
        for label in [namespace, type] {
            let utf8 = Array(label.utf8.prefix(255))
            out.append(UInt8(utf8.count))
            out += utf8
        }
    }
}

/// What a publication of a large message advertises instead of the message.
package struct MessageDescriptor: Sendable, Hashable {
    /// The message's namespace.
    package var namespace: String
    /// The message's type.
    package var type: String
    /// The content's length in bytes.
    package var contentLength: Int
    /// The first 8 bytes of SHA-256 of the content.
    package var digest: [UInt8]

    /// Creates a descriptor from its fields.
    package init(namespace: String, type: String, contentLength: Int, digest: [UInt8]) {
        self.namespace = namespace
        self.type = type
        self.contentLength = contentLength
        self.digest = digest
    }

    /// The descriptor of `message`.
    package init(_ message: Message) {
        self.init(
            namespace: message.namespace, type: message.type, contentLength: message.content.count,
            digest: Array(SHA256Digest.hash(message.content).prefix(MessageEnvelope.digestLength)))
    }

    /// Whether `message` is the one described.
    package func describes(_ message: Message) -> Bool {
        self == MessageDescriptor(message)
    }
}

extension ByteReader {
    /// Reads a label: a length byte, then that many bytes of UTF-8.
    fileprivate mutating func readLabel(_ field: String) throws(NearbyError) -> String {
        let count = Int(try readByte("\(field) length"))
        let raw = try readBytes(count, field)
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw NearbyError(.invalidAdvertisement, "message label is not UTF-8")
        }
        return text
    }
}
