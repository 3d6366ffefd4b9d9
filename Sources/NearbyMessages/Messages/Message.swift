import Foundation
import NearbyWire

/// A message: opaque content labelled with a namespace and a type, as Google's Nearby Messages API has it.
///
/// Two messages are equal when their namespace, type and content are equal; subscriptions report each distinct
/// message once, however many publishers carry it.
public struct Message: Sendable, Hashable, CustomStringConvertible {
    /// The largest content a message may carry: 100 KiB (102,400 bytes).
    public static let maximumContentSize = 102_400
    /// The longest type, in characters (Google's `MAX_TYPE_LENGTH`).
    public static let maximumTypeLength = 32
    /// The most UTF-8 bytes namespace and type may have together, so that even the descriptor of a large message
    /// fits in the 131-byte endpoint info (131 − 16 bytes of envelope overhead).
    public static let maximumLabelBytes = 115
    /// The namespace beacon messages are delivered in.
    public static let reservedNamespace = "__reserved_namespace"

    /// The namespace; the empty string is the default, service-private namespace.
    public var namespace: String
    /// The type; the empty string is the default type.
    public var type: String
    /// The content.
    public var content: Data

    /// Creates a message. Nothing is checked here; ``validate()`` (called by ``MessageManager/publish(_:options:)``)
    /// reports what is wrong.
    public init(content: Data, namespace: String = "", type: String = "") {
        self.content = content
        self.namespace = namespace
        self.type = type
    }

    /// Creates a message whose content is the UTF-8 of `text`.
    public init(text: String, namespace: String = "", type: String = "") {
        self.init(content: Data(text.utf8), namespace: namespace, type: type)
    }

    /// The content as UTF-8 text, when it is valid UTF-8.
    public var text: String? { String(data: content, encoding: .utf8) }

    /// `namespace/type: N bytes`.
    public var description: String { "\(namespace)/\(type): \(content.count) bytes" }

    /// Checks the limits: content at most ``maximumContentSize`` bytes, type at most ``maximumTypeLength``
    /// characters, namespace and type together at most ``maximumLabelBytes`` UTF-8 bytes, and no `*` in either.
    /// - Throws: `NearbyError` with code `NearbyError.Code.messageTooLarge` or
    ///   `NearbyError.Code.invalidMessageLabel`.
    public func validate() throws(NearbyError) {
        guard content.count <= Self.maximumContentSize else {
            throw NearbyError(
                .messageTooLarge,
                "message content is \(content.count) bytes; the maximum is \(Self.maximumContentSize) bytes")
        }
        try Self.checkLabel(namespace, "namespace")
        try Self.checkLabel(type, "type")
        guard type.count <= Self.maximumTypeLength else {
            throw NearbyError(
                .invalidMessageLabel, "message type is \(type.count) characters; the maximum is \(Self.maximumTypeLength)")
        }
        guard namespace.utf8.count + type.utf8.count <= Self.maximumLabelBytes else {
            throw NearbyError(
                .invalidMessageLabel,
                "message namespace and type are \(namespace.utf8.count + type.utf8.count) bytes together; the maximum is \(Self.maximumLabelBytes)")
        }
    }

    static func checkLabel(_ label: String, _ what: String) throws(NearbyError) {
        if label.contains("*") {
            throw NearbyError(.invalidMessageLabel, "a message \(what) must not contain '*' (got \"\(label)\")")
        }
    }
}

/// The message types of beacon messages, all in ``Message/reservedNamespace``.
public enum BeaconMessageType {
    /// Eddystone-UID: content is the 10-byte namespace followed by the 6-byte instance (Google's type name).
    public static let eddystoneUID = "__eddystone_uid"
    /// iBeacon: content is the 16-byte proximity UUID, 2-byte major and 2-byte minor, big-endian (Google's type name).
    public static let iBeaconID = "__i_beacon_id"
    /// Eddystone-URL: content is the expanded URL in UTF-8 (this port's type name).
    public static let eddystoneURL = "__eddystone_url"
    /// Eddystone-TLM: content is the frame after its frame-type byte (version first; this port's type name).
    public static let eddystoneTLM = "__eddystone_tlm"
    /// Eddystone-EID: content is the 8-byte ephemeral ID (this port's type name).
    public static let eddystoneEID = "__eddystone_eid"
    /// AltBeacon: content is the 20-byte beacon ID (this port's type name).
    public static let altBeaconID = "__alt_beacon_id"
}
