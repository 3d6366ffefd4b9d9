/// Decides whether an incoming connection may be taken when the engine's tables are full, and which pending
/// connection makes room for it: a value-level decision the engine performs.
///
/// A connection is *pending* from its accept until both sides accepted (handshaking, or awaiting a decision). A
/// stranger that completes UKEY2 on many connections and never answers could otherwise fill the table of pending
/// connections (``ResourceLimits/maxPendingEndpoints``) and lock everyone else out until its connections time out.
/// Instead, when a table is full, the newcomer takes the place of the longest-waiting pending *incoming* connection
/// of the source (peer address) that holds the most pending connections: a flooding source loses its own
/// connections first, and a newcomer from anywhere else always gets in. A source already holding
/// ``ResourceLimits/maxPendingEndpointsPerSource`` pending connections keeps that many: its newcomer takes the place
/// of its own oldest. Memory stays bounded by ``ResourceLimits/maxEndpoints``.
package enum PendingConnectionPolicy {
    /// An open connection, as the policy sees it.
    package struct Connection<ID: Hashable & Sendable>: Sendable {
        package var id: ID
        /// The peer's address (``EndpointChannel/peerSource``).
        package var source: String
        /// Whether the peer opened it.
        package var isIncoming: Bool
        /// Whether both sides have not accepted yet.
        package var isPending: Bool
        /// When it was opened (a clock reading).
        package var since: Duration

        package init(id: ID, source: String, isIncoming: Bool, isPending: Bool, since: Duration) {
            self.id = id
            self.source = source
            self.isIncoming = isIncoming
            self.isPending = isPending
            self.since = since
        }
    }

    /// What to do with a new incoming connection.
    package enum Decision<ID: Hashable & Sendable>: Sendable, Equatable {
        /// Take it.
        case admit
        /// End the pending connection `ID` (it waited longest, from the busiest source), then take the new one.
        case admitEvicting(ID)
        /// Close it, for this reason.
        case refuse(String)
    }

    /// The decision for a new incoming connection from `source`, given the open connections.
    package static func decide<ID>(
        source: String, open: [Connection<ID>], limits: ResourceLimits
    ) -> Decision<ID> {
        let pending = open.filter(\.isPending)
        let evictable = pending.filter(\.isIncoming)
        let sameSource = evictable.filter { $0.source == source }
        if sameSource.count >= limits.maxPendingEndpointsPerSource {
            // This address holds its share already: its newest connection takes the place of its oldest.
            guard let oldest = sameSource.min(by: { $0.since < $1.since }) else {
                return .refuse("no pending connection may come from \(source)")
            }
            return .admitEvicting(oldest.id)
        }
        let full: String?
        if open.count >= limits.maxEndpoints {
            full = "\(open.count) endpoints open, the limit is \(limits.maxEndpoints)"
        } else if pending.count >= limits.maxPendingEndpoints {
            full = "\(pending.count) endpoints not yet connected, the limit is \(limits.maxPendingEndpoints)"
        } else {
            full = nil
        }
        guard let full else { return .admit }
        var counts: [String: Int] = [:]
        for connection in evictable { counts[connection.source, default: 0] += 1 }
        guard let busiest = counts.max(by: { ($0.value, $1.key) < ($1.value, $0.key) })?.key,
            let victim = evictable.filter({ $0.source == busiest }).min(by: { $0.since < $1.since })
        else {
            return .refuse(full + ", and none of them is a pending incoming connection")
        }
        return .admitEvicting(victim.id)
    }
}

extension EndpointChannel {
    /// The peer's address without port or channel details (`10.0.0.2` for `10.0.0.2:40123`, `[fe80::1]` for
    /// `[fe80::1]:40123`, the BLE address for an L2CAP channel): what ``ResourceLimits/maxPendingEndpointsPerSource``
    /// counts by.
    public var peerSource: String {
        let description = peerDescription
        if let space = description.firstIndex(of: " ") { return String(description[..<space]) }
        if description.hasPrefix("["), let close = description.firstIndex(of: "]") {
            return String(description[...close])
        }
        if description.filter({ $0 == ":" }).count == 1, let colon = description.lastIndex(of: ":"),
            description[description.index(after: colon)...].allSatisfy(\.isNumber)
        {
            return String(description[..<colon])
        }
        return description
    }
}
