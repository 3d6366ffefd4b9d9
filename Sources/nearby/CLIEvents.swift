import Foundation
import NearbyMessages
import NearbyWire

// The fields of the `--json` events (docs: the CLI contract). ``EventOutput`` adds the `"event"` name and encodes
// them with `JSONEncoder`, sorted keys and snake_case keys (`endpointID` → `endpoint_id`). An optional field is
// left out when `nil`, except where a type writes `null` on purpose.

/// `connected`, `rejected`, `endpoint_lost`.
struct EndpointEvent: Encodable {
    var endpointID: String
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

/// `payload_received`: `path` only for a file.
struct PayloadReceivedEvent: Encodable {
    var endpointID: String
    var payloadID: Int64
    var type: String
    var size: Int64
    var sha256: String
    var path: String?
}

/// `payload_sent`: `endpoint_id` names the peer it went to.
struct PayloadSentEvent: Encodable {
    var payloadID: Int64
    var type: String
    var size: Int64
    var sha256: String
    var endpointID: String?
}

/// `transfer_update`.
struct TransferUpdateEvent: Encodable {
    var endpointID: String
    var payloadID: Int64
    var status: String
    var bytes: Int64
    var total: Int64
}

/// `cancel_requested` (SIGUSR1).
struct CancelRequestedEvent: Encodable {
    var payloadID: Int64
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
