import Foundation
import NearbyMessages
import NearbyWire

/// A found or lost message, sent to the clients that follow the subscription: the fields of the CLI's
/// `message_found` / `message_lost` events plus the subscription's handle and service ID. Also the end of a
/// subscription that stopped in the service (its TTL ran out, or a client unsubscribed it): `subscription_ended`
/// with a ``reason`` and empty message fields.
///
/// ```json
/// {"event":"message_found","subscription":"sub-1a2b3c4d","service_id":"com.example","message":"hi",
///  "message_hex":"6869","namespace":"","type":"","size":2}
/// {"event":"subscription_ended","subscription":"sub-1a2b3c4d","service_id":"com.example","reason":"expired",
///  "message":"","message_hex":"","namespace":"","type":"","size":0}
/// ```
public struct ServiceEvent: Codable, Sendable, Hashable {
    /// `message_found` or `message_lost`.
    public var event: String
    /// The subscription's handle.
    public var subscription: String
    /// The subscription's service ID.
    public var serviceID: String
    /// The content as UTF-8 text (empty when it is not valid UTF-8).
    public var message: String
    /// The content as hex bytes.
    public var messageHex: String
    /// The message namespace.
    public var namespace: String
    /// The message type.
    public var type: String
    /// The content's size in bytes.
    public var size: Int
    /// Why a `subscription_ended` subscription stopped: ``EndReason``'s raw values; `nil` for found and lost.
    public var reason: String?

    /// Why a subscription stopped in the service.
    public enum EndReason: String, Sendable, Hashable, CaseIterable {
        /// Its TTL ran out.
        case expired
        /// A client unsubscribed it (by its handle).
        case unsubscribed
        /// The client that made it without `background` disconnected (sent to the clients watching it).
        case ownerDisconnected = "owner_disconnected"
    }

    /// The `subscription_ended` event of `subscription`.
    public static func subscriptionEnded(_ subscription: String, serviceID: String, reason: EndReason) -> ServiceEvent {
        var event = ServiceEvent(.found, Message(content: Data()), subscription: subscription, serviceID: serviceID)
        event.event = "subscription_ended"
        event.reason = reason.rawValue
        return event
    }

    /// Whether this is the end of the subscription (`subscription_ended`), not a message.
    public var isSubscriptionEnd: Bool { event == "subscription_ended" }

    /// The event of `kind` for `message`, from the subscription `subscription` of `serviceID`.
    public init(_ kind: MessageEvent.Kind, _ message: Message, subscription: String, serviceID: String) {
        event = "message_\(kind.rawValue)"
        self.subscription = subscription
        self.serviceID = serviceID
        self.message = message.text ?? ""
        messageHex = Hex.encode(message.content)
        namespace = message.namespace
        type = message.type
        size = message.content.count
    }

    /// Found or lost; `nil` for an event name this version does not know.
    public var kind: MessageEvent.Kind? {
        event.hasPrefix("message_") ? MessageEvent.Kind(rawValue: String(event.dropFirst("message_".count))) : nil
    }

    /// The message the event is about; `nil` when ``messageHex`` is not hex.
    public var decodedMessage: Message? {
        guard let bytes = try? Hex.decode(messageHex) else { return nil }
        return Message(content: Data(bytes), namespace: namespace, type: type)
    }

    enum CodingKeys: String, CodingKey {
        case event, subscription, message, namespace, type, size, reason
        case serviceID = "service_id"
        case messageHex = "message_hex"
    }
}

/// One line the service sends: the response to a request, or an event.
public enum ServiceReply: Sendable, Hashable {
    /// The answer to a request.
    case response(ServiceResponse)
    /// A found or lost message.
    case event(ServiceEvent)
}

/// Encodes and decodes the protocol's lines: compact JSON with sorted keys, one object per line, dates as ISO 8601.
public enum ServiceCodec {
    /// The longest request line the service accepts, in bytes (a 100 KiB message is 200 KiB of hex).
    public static let maximumLineLength = 512 * 1024
    /// The longest event line the service sends, in bytes: a message of 100 KiB whose every byte JSON escapes as
    /// `\u00XX` (6 bytes, and 2 more of hex), with labels of 255 such bytes each, is about 803 KiB, well below.
    public static let maximumEventLineLength = 1024 * 1024
    /// The longest line a client accepts, in bytes: a `list` response of ``ServiceLimits/maxItems`` (64)
    /// publications of 100 KiB is about 13 MiB.
    public static let maximumReplyLineLength = 16 * 1024 * 1024

    /// `value` as one line of JSON, without the newline.
    public static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// A reply as one line of JSON, without the newline.
    public static func encode(_ reply: ServiceReply) throws -> String {
        switch reply {
        case .response(let response): try encode(response)
        case .event(let event): try encode(event)
        }
    }

    /// Decodes one line as `type`.
    /// - Throws: `NearbyError` with code `.malformedMessage` naming what is wrong.
    public static func decode<T: Decodable>(_ type: T.Type, from line: some DataProtocol) throws(NearbyError) -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(type, from: Data(line))
        } catch {
            throw NearbyError(.malformedMessage, "not a valid \(T.self): \(Self.reason(error))")
        }
    }

    /// Decodes a line the service sent: an event when it has an `"event"` key, otherwise a response.
    /// - Throws: `NearbyError` with code `.malformedMessage`.
    public static func decodeReply(from line: some DataProtocol) throws(NearbyError) -> ServiceReply {
        if try decode(EventProbe.self, from: line).event != nil {
            return .event(try decode(ServiceEvent.self, from: line))
        }
        return .response(try decode(ServiceResponse.self, from: line))
    }

    private static func reason(_ error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, _)?: "missing \"\(key.stringValue)\""
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            "wrong type at \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\""
        case .dataCorrupted(let context)?:
            context.codingPath.isEmpty
                ? "not JSON" : "bad value at \"\(context.codingPath.map(\.stringValue).joined(separator: "."))\""
        default: "\(error)"
        }
    }
}

/// The one key that tells an event line from a response line.
private struct EventProbe: Decodable {
    var event: String?
}
