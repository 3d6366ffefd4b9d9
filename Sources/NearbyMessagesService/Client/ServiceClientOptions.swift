import NearbyMessages
import NearbyWire

/// Options of a publication made through the service (``ServiceMessageManager/publish(_:options:)``).
///
/// The mediums are the service's (`nearby service --medium`), not the app's.
public struct ServicePublishOptions: Sendable, Hashable {
    /// How long the publication lasts; `nil` (the default) publishes until cancelled. The TTL keeps running while
    /// the service is down.
    public var ttl: Duration?
    /// Whether the publication outlives this connection and restarts of the service (it is saved in the service's
    /// state file, Google's "allow in background"); default false: it stops when the connection closes.
    public var background: Bool

    /// Creates options.
    public init(ttl: Duration? = nil, background: Bool = false) {
        self.ttl = ttl
        self.background = background
    }
}

/// Options of a subscription made through the service (``ServiceMessageManager/subscribe(options:onFound:onLost:)``).
public struct ServiceSubscribeOptions: Sendable, Hashable {
    /// Which messages to report; default every message of the service ID. The service filters on at most one
    /// namespace/type pair.
    public var filter: MessageFilter
    /// How long the subscription lasts; `nil` (the default) subscribes until cancelled.
    public var ttl: Duration?
    /// Whether the subscription outlives this connection and restarts of the service; default false. Its events
    /// reach this connection while it is open, and any later one through
    /// ``ServiceMessageManager/subscription(handle:onFound:onLost:)``.
    public var background: Bool

    /// Creates options.
    public init(filter: MessageFilter = MessageFilter(), ttl: Duration? = nil, background: Bool = false) {
        self.filter = filter
        self.ttl = ttl
        self.background = background
    }
}

extension Duration {
    /// The duration in seconds, as the protocol's `ttl` carries it.
    var protocolSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
