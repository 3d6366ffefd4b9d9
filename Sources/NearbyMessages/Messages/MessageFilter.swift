import NearbyWire

/// Which messages a subscription reports: any message matching one of the namespace/type pairs. An empty filter
/// (the default) matches every message of the service.
public struct MessageFilter: Sendable, Hashable {
    /// A namespace and type to match; `nil` type matches every type of the namespace.
    public struct Entry: Sendable, Hashable {
        /// The namespace to match exactly (the empty string is the default namespace).
        public var namespace: String
        /// The type to match exactly, or `nil` for every type.
        public var type: String?
    }

    /// The pairs; empty matches everything.
    public private(set) var entries: [Entry] = []

    /// A filter that matches everything.
    public init() {}

    /// Adds a namespace and type (`nil` type: every type in the namespace).
    /// - Throws: `NearbyError` with code `NearbyError.Code.invalidMessageLabel` when either contains `*`.
    public func including(namespace: String, type: String?) throws(NearbyError) -> MessageFilter {
        try Message.checkLabel(namespace, "namespace")
        if let type { try Message.checkLabel(type, "type") }
        var copy = self
        copy.entries.append(Entry(namespace: namespace, type: type))
        return copy
    }

    /// A filter for one namespace and type.
    public static func namespacedType(_ namespace: String, _ type: String?) throws(NearbyError) -> MessageFilter {
        try MessageFilter().including(namespace: namespace, type: type)
    }

    /// Whether a message with this namespace and type passes.
    public func matches(namespace: String, type: String) -> Bool {
        entries.isEmpty || entries.contains { $0.namespace == namespace && ($0.type == nil || $0.type == type) }
    }
}
