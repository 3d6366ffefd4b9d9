import Foundation
import NearbyMessagesService

// The fields of the `nearby service … --json` events (docs/MESSAGES-SERVICE.md); ``EventOutput`` adds `"event"`
// and writes the keys in snake_case.

/// `message_found`, `message_lost` from the service: the fields of `nearby subscribe`'s events plus the
/// subscription's handle and service ID.
struct ServiceMessageEventFields: Encodable {
    var subscription: String
    var serviceID: String
    var message: String
    var messageHex: String
    var namespace: String
    var type: String
    var size: Int

    init(_ event: ServiceEvent) {
        subscription = event.subscription
        serviceID = event.serviceID
        message = event.message
        messageHex = event.messageHex
        namespace = event.namespace
        type = event.type
        size = event.size
    }
}

/// `subscription_ended`: a subscription the command follows stopped in the service (`reason`: `expired`,
/// `unsubscribed`, `owner_disconnected`).
struct ServiceSubscriptionEndedFields: Encodable {
    var subscription: String
    var serviceID: String
    var reason: String?

    init(_ event: ServiceEvent) {
        subscription = event.subscription
        serviceID = event.serviceID
        reason = event.reason
    }
}

/// `published`, `subscribed`, `watching`, `unpublished`, `unsubscribed`.
struct ServiceHandleEvent: Encodable {
    var handle: String?
    var background: Bool?
}

/// `publication`, `subscription` (`nearby service list`).
struct ServiceEntryFields: Encodable {
    var handle: String
    var serviceID: String
    var namespace: String?
    var type: String?
    var contentHex: String?
    var background: Bool
    var expiresAt: String?

    init(_ entry: ServiceEntry) {
        handle = entry.handle
        serviceID = entry.serviceID
        namespace = entry.namespace
        type = entry.type
        contentHex = entry.contentHex
        background = entry.background
        expiresAt = entry.expiresAt.map { ISO8601DateFormatter().string(from: $0) }
    }
}
