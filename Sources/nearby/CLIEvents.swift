import Foundation
import NearbyMessages
import NearbyWire

// The fields of the `--json` events (docs: the CLI contract). ``EventOutput`` adds the `"event"` name and encodes
// them with `JSONEncoder`, sorted keys and snake_case keys (`endpointID` → `endpoint_id`). An optional field is
// left out when `nil`, except where a type writes `null` on purpose. Payload IDs are strings of decimal digits:
// they use all 64 bits, and JSON readers that hold numbers as doubles (jq, JavaScript) round those above 2^53.

/// `connected`, `endpoint_lost`.
struct EndpointEvent: Encodable {
    var endpointID: String
}

/// `rejected`: `by` says who refused, `local` (this side: `--accept` missing, or the user said no) or `peer`.
struct RejectedEvent: Encodable {
    var endpointID: String
    var by: String
}

/// `connection_initiated`.
struct ConnectionInitiatedEvent: Encodable {
    var endpointID: String
    var endpointInfoHex: String
    var digits: String
    var token: String
    var incoming: Bool
}

/// `disconnected`: `error` is `null` after a clean disconnect.
struct DisconnectedEvent: Encodable {
    var endpointID: String
    var error: String?

    enum CodingKeys: CodingKey { case endpointID, error }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(endpointID, forKey: .endpointID)
        try container.encode(error, forKey: .error)
    }
}

/// `medium_changed`.
struct MediumChangedEvent: Encodable {
    var endpointID: String
    var medium: String
}

/// `reconnecting`: the link broke without a goodbye; `reconnected` (fields of ``MediumChangedEvent``) or
/// `disconnected` follows.
struct ReconnectingEvent: Encodable {
    var endpointID: String
    var error: String
}

/// `endpoint_found`.
struct EndpointFoundEvent: Encodable {
    var endpointID: String
    var endpointInfoHex: String
    var medium: String
}

/// `advertising`: one per medium.
struct AdvertisingEvent: Encodable {
    var endpointID: String
    var port: Int
    var serviceType: String
    var medium: String
    var discoverable: Bool
}

/// `payload_received`: `path` only for a file (and for a stream written with `--stream-to FILE`). A BYTES payload
/// also carries its content: `text` when it is valid UTF-8, `hex` otherwise, cut to
/// ``BytesContent/jsonLimit`` bytes with `truncated` set when it is longer.
struct PayloadReceivedEvent: Encodable {
    var endpointID: String
    var payloadID: String
    var type: String
    var size: Int64
    var sha256: String
    var path: String?
    var text: String?
    var hex: String?
    var truncated: Bool?
    /// The name the sender gave a file (with its folders: `photos/a.jpg`).
    var name: String?
}

/// `payload_sent`: `endpoint_id` names the peer it went to.
struct PayloadSentEvent: Encodable {
    var payloadID: String
    var type: String
    var size: Int64
    var sha256: String
    var endpointID: String?
    /// The name the peer sees for a file (with its folders: `photos/a.jpg`).
    var name: String?
}

/// `payload_failed`: why a payload failed, when it is known (`reason`); `incoming` says which way it went. For an
/// outgoing payload the reason is the one the receiver gave in its PAYLOAD_ERROR (docs/CLI.md).
struct PayloadFailedEvent: Encodable {
    var endpointID: String
    var payloadID: String
    var incoming: Bool
    var reason: String
}

/// `transfer_update`.
struct TransferUpdateEvent: Encodable {
    var endpointID: String
    var payloadID: String
    var status: String
    var bytes: Int64
    var total: Int64
}

/// `cancel_requested` (SIGUSR1).
struct CancelRequestedEvent: Encodable {
    var payloadID: String
}

/// `publishing`.
struct PublishingEvent: Encodable {
    var endpointID: String
    var size: Int
    var namespace: String
    var type: String
    var mediums: [String]
}

/// `message_found`, `message_lost`.
struct MessageEventFields: Encodable {
    var message: String
    var messageHex: String
    var namespace: String
    var type: String
    var size: Int

    init(_ message: Message) {
        self.message = message.text ?? ""
        messageHex = Hex.encode(message.content)
        namespace = message.namespace
        type = message.type
        size = message.content.count
    }
}
