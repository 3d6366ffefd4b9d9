import NearbyWire

/// Which connections a strategy allows, and who wins when two endpoints request each other at the same moment.
///
/// A value with no state of its own: the engine describes the connections it holds as ``Link``s and asks before
/// every outgoing request (``outgoing(to:links:)``) and for every incoming request once its CONNECTION_REQUEST is
/// read (``incoming(from:nonce:links:)``). The rules are those of Google's PCP handlers (`p2p_star_pcp_handler`,
/// `p2p_point_to_point_pcp_handler`, `p2p_cluster_pcp_handler`, `base_pcp_handler`):
///
/// | Strategy | Outgoing request allowed when | Incoming request allowed when |
/// |---|---|---|
/// | `cluster` | always | always |
/// | `star` | no connection in either direction | no outgoing connection |
/// | `pointToPoint` | no connection in either direction | no connection in either direction |
///
/// "Connection" counts pending ones (requested, handshake or decision under way) as well as connected ones.
/// Google applies these checks only with `enforce_topology_constraints` (its v3 API's default); swift-nearby
/// always applies them.
package struct TopologyRules: Sendable, Equatable {
    /// Which side opened a connection.
    package enum Direction: Sendable, Equatable {
        /// The peer requested it (we advertise).
        case incoming
        /// We requested it.
        case outgoing
    }

    /// One connection the engine holds, pending or connected.
    package struct Link: Sendable, Equatable {
        /// The peer's endpoint ID (a local alias for connections made by address).
        package var endpointID: String
        /// Who requested it.
        package var direction: Direction
        /// Whether both sides accepted.
        package var isConnected: Bool
        /// The nonce of our request (outgoing links; the simultaneous-connection tie-break compares it).
        package var nonce: Int32

        /// Creates a link.
        package init(endpointID: String, direction: Direction, isConnected: Bool = false, nonce: Int32 = 0) {
            self.endpointID = endpointID
            self.direction = direction
            self.isConnected = isConnected
            self.nonce = nonce
        }
    }

    /// What to do with an outgoing request.
    package enum OutgoingDecision: Sendable, Equatable {
        /// Go ahead.
        case allow
        /// Fail the request locally with this error code (Google's status) and reason.
        case refuse(NearbyError.Code, reason: String)
    }

    /// Why an incoming request is refused.
    package enum Refusal: String, Sendable, Equatable, CustomStringConvertible {
        /// We already have a connection (pending or connected) with that endpoint.
        case alreadyConnected = "already connected or connecting to that endpoint"
        /// We requested a connection to that endpoint too, and our nonce is larger: ours goes on.
        case wonTieBreak = "simultaneous requests: our nonce is larger, our request goes on"
        /// Both requests carried the same nonce: both are dropped, either side may retry.
        case equalNonces = "simultaneous requests with equal nonces: both dropped"
        /// The strategy does not allow another incoming connection now.
        case topology = "the strategy does not allow this connection now"

        /// The reason in words.
        package var description: String { rawValue }
    }

    /// What to do with an incoming request. A refused request's channel is closed before the handshake (what
    /// Google's advertiser does), so the requester's attempt fails at once instead of hanging.
    package enum IncomingDecision: Sendable, Equatable {
        /// Go on with the handshake.
        case admit
        /// Go on with theirs, and drop our own pending request to the same endpoint (we lost the tie-break).
        case admitDroppingOurs
        /// Close their channel; our own connections stay as they are.
        case refuse(Refusal)
        /// Close their channel and drop our own pending request to the same endpoint: equal nonces, or the
        /// tie-break dropped ours and the strategy still refuses theirs.
        case refuseDroppingOurs(Refusal)
    }

    /// The strategy whose rules apply.
    package let strategy: Strategy

    /// Rules for `strategy`.
    package init(strategy: Strategy) {
        self.strategy = strategy
    }

    /// Whether we may request a connection to `endpointID` while holding `links`.
    ///
    /// A second request to an endpoint we are connected or connecting to fails with `alreadyConnectedToEndpoint`;
    /// one the strategy forbids fails with `outOfOrderApiCall` (Google's `kOutOfOrderApiCall`).
    package func outgoing(to endpointID: String, links: [Link]) -> OutgoingDecision {
        if links.contains(where: { $0.endpointID == endpointID }) {
            return .refuse(.alreadyConnectedToEndpoint, reason: "already connected or connecting to \(endpointID)")
        }
        switch strategy {
        case .cluster:
            return .allow
        case .star, .pointToPoint:
            guard let other = links.first else { return .allow }
            let what = strategy == .star
                ? "star: a spoke holds one connection and a hub makes no outgoing ones"
                : "point-to-point allows one connection at a time"
            return .refuse(.outOfOrderApiCall, reason: "\(what); \(Self.describe(other)) exists, disconnect first")
        }
    }

    /// What to do with a CONNECTION_REQUEST from `endpointID` carrying `nonce` while we hold `links`.
    ///
    /// Order as in Google's advertiser: a connected endpoint is refused; a request from an endpoint we have a
    /// pending request to is settled by the tie-break (§3.5: the larger nonce wins, equal nonces drop both);
    /// then the strategy decides, counting our connections without the request the tie-break dropped.
    package func incoming(from endpointID: String, nonce: Int32, links: [Link]) -> IncomingDecision {
        var remaining = links
        var droppedOurs = false
        if let same = links.first(where: { $0.endpointID == endpointID }) {
            guard same.direction == .outgoing, !same.isConnected else { return .refuse(.alreadyConnected) }
            switch TieBreak.decide(ours: same.nonce, theirs: nonce) {
            case .keepOurs: return .refuse(.wonTieBreak)
            case .dropBoth: return .refuseDroppingOurs(.equalNonces)
            case .keepTheirs:
                droppedOurs = true
                remaining.removeAll { $0.endpointID == endpointID }
            }
        }
        let allowed = switch strategy {
        case .cluster: true
        case .star: !remaining.contains { $0.direction == .outgoing }
        case .pointToPoint: remaining.isEmpty
        }
        guard allowed else { return droppedOurs ? .refuseDroppingOurs(.topology) : .refuse(.topology) }
        return droppedOurs ? .admitDroppingOurs : .admit
    }

    private static func describe(_ link: Link) -> String {
        let phase = link.isConnected ? "connected" : "pending"
        let direction = link.direction == .outgoing ? "outgoing" : "incoming"
        return "a \(phase) \(direction) connection with \(link.endpointID)"
    }
}

/// The simultaneous-connection tie-break (protocol reference §3.5, Google's `BreakTie`): when a request arrives
/// from an endpoint we have a pending request to, the request with the larger nonce goes on; with equal nonces
/// both are dropped and the apps may retry. Both sides compare the same two nonces, so they agree.
package enum TieBreak: Sendable, Equatable {
    /// Our request goes on; theirs is closed.
    case keepOurs
    /// Their request goes on; ours is dropped.
    case keepTheirs
    /// Both are dropped.
    case dropBoth

    /// The outcome for our nonce `ours` against their nonce `theirs`.
    package static func decide(ours: Int32, theirs: Int32) -> TieBreak {
        if ours > theirs { return .keepOurs }
        if ours < theirs { return .keepTheirs }
        return .dropBoth
    }
}
