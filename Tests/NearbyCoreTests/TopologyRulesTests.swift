import NearbyCore
import NearbyWire
import Testing

/// The strategy rules and the simultaneous-connection tie-break as values: every strategy against every kind of
/// connection already held (Google's PCP handlers, protocol reference §9.3 and §3.5).
struct TopologyRulesTests {
    typealias Link = TopologyRules.Link

    /// One connection with another endpoint ("OTHR") that we may hold when a new request comes or goes.
    enum Held: String, CaseIterable, Sendable {
        case nothing, pendingOutgoing, connectedOutgoing, pendingIncoming, connectedIncoming

        var links: [Link] {
            switch self {
            case .nothing: []
            case .pendingOutgoing: [Link(endpointID: "OTHR", direction: .outgoing, nonce: 5)]
            case .connectedOutgoing: [Link(endpointID: "OTHR", direction: .outgoing, isConnected: true, nonce: 5)]
            case .pendingIncoming: [Link(endpointID: "OTHR", direction: .incoming)]
            case .connectedIncoming: [Link(endpointID: "OTHR", direction: .incoming, isConnected: true)]
            }
        }
        var hasOutgoing: Bool { self == .pendingOutgoing || self == .connectedOutgoing }
    }

    static let cases = Strategy.allCases.flatMap { strategy in Held.allCases.map { (strategy, $0) } }

    @Test("An outgoing request: cluster always; star and point-to-point only with no connection", .timeLimit(.minutes(5)), arguments: cases)
    func outgoing(strategy: Strategy, held: Held) {
        let decision = TopologyRules(strategy: strategy).outgoing(to: "NEWW", links: held.links)
        let allowed = strategy == .cluster || held == .nothing
        if allowed {
            #expect(decision == .allow)
        } else {
            #expect(Self.refusal(decision)?.code == .outOfOrderApiCall, "\(strategy) with \(held): \(decision)")
            #expect(Self.refusal(decision)?.reason.contains("OTHR") == true)
        }
    }

    @Test(
        "An incoming request: cluster always; star unless we hold an outgoing one; point-to-point only with none",
        .timeLimit(.minutes(5)), arguments: cases)
    func incoming(strategy: Strategy, held: Held) {
        let decision = TopologyRules(strategy: strategy).incoming(from: "NEWW", nonce: 1, links: held.links)
        let allowed = switch strategy {
        case .cluster: true
        case .star: !held.hasOutgoing
        case .pointToPoint: held == .nothing
        }
        #expect(decision == (allowed ? .admit : .refuse(.topology)))
    }

    @Test("A second request to an endpoint we are connected or connecting to fails: alreadyConnectedToEndpoint",
          .timeLimit(.minutes(5)), arguments: Strategy.allCases)
    func outgoingDuplicate(strategy: Strategy) {
        let rules = TopologyRules(strategy: strategy)
        for link in Held.allCases.flatMap(\.links) {
            let decision = rules.outgoing(to: "OTHR", links: [link])
            #expect(Self.refusal(decision)?.code == .alreadyConnectedToEndpoint, "\(strategy), \(link): \(decision)")
        }
    }

    @Test("A request from an endpoint we are connected to, or that is already asking, is refused",
          .timeLimit(.minutes(5)), arguments: Strategy.allCases)
    func incomingDuplicate(strategy: Strategy) {
        let rules = TopologyRules(strategy: strategy)
        for held in [Held.connectedOutgoing, .pendingIncoming, .connectedIncoming] {
            #expect(rules.incoming(from: "OTHR", nonce: 99, links: held.links) == .refuse(.alreadyConnected))
        }
    }

    @Test("Simultaneous requests: the larger nonce goes on, equal nonces drop both, in every strategy",
          .timeLimit(.minutes(5)), arguments: Strategy.allCases)
    func tieBreak(strategy: Strategy) {
        let rules = TopologyRules(strategy: strategy)
        let ours = [Link(endpointID: "OTHR", direction: .outgoing, nonce: 5)]
        #expect(rules.incoming(from: "OTHR", nonce: 4, links: ours) == .refuse(.wonTieBreak))
        #expect(rules.incoming(from: "OTHR", nonce: 6, links: ours) == .admitDroppingOurs)
        #expect(rules.incoming(from: "OTHR", nonce: 5, links: ours) == .refuseDroppingOurs(.equalNonces))
        #expect(rules.incoming(from: "OTHR", nonce: .min, links: [
            Link(endpointID: "OTHR", direction: .outgoing, nonce: .max)]) == .refuse(.wonTieBreak))
    }

    @Test("Both sides reach opposite, consistent outcomes: exactly one request survives unless the nonces are equal", .timeLimit(.minutes(5)))
    func tieBreakIsConsistent() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1000 {
            let a = Int32.random(in: -3...3, using: &generator)
            let b = Int32.random(in: -3...3, using: &generator)
            let atA = TieBreak.decide(ours: a, theirs: b)
            let atB = TieBreak.decide(ours: b, theirs: a)
            switch atA {
            case .keepOurs: #expect(atB == .keepTheirs)
            case .keepTheirs: #expect(atB == .keepOurs)
            case .dropBoth: #expect(atB == .dropBoth && a == b)
            }
        }
    }

    @Test("After the tie-break drops ours, the strategy counts what is left", .timeLimit(.minutes(5)))
    func tieBreakThenTopology() {
        let ours = Link(endpointID: "OTHR", direction: .outgoing, nonce: 1)
        let hubSpoke = Link(endpointID: "SPKE", direction: .incoming, isConnected: true)
        let elsewhere = Link(endpointID: "ELSE", direction: .outgoing, nonce: 7)
        // Point-to-point with another connection too: theirs is refused, ours is still dropped (as Google does).
        #expect(TopologyRules(strategy: .pointToPoint).incoming(from: "OTHR", nonce: 2, links: [ours, hubSpoke])
            == .refuseDroppingOurs(.topology))
        #expect(TopologyRules(strategy: .star).incoming(from: "OTHR", nonce: 2, links: [ours, hubSpoke])
            == .admitDroppingOurs)
        #expect(TopologyRules(strategy: .star).incoming(from: "OTHR", nonce: 2, links: [ours, elsewhere])
            == .refuseDroppingOurs(.topology))
        #expect(TopologyRules(strategy: .cluster).incoming(from: "OTHR", nonce: 2, links: [ours, elsewhere])
            == .admitDroppingOurs)
    }

    @Test("A star hub takes many spokes; a spoke holds one connection", .timeLimit(.minutes(5)))
    func starHubAndSpokes() {
        let star = TopologyRules(strategy: .star)
        var hub: [Link] = []
        for index in 0..<100 {
            let id = String(format: "S%03d", index)
            #expect(star.incoming(from: id, nonce: 0, links: hub) == .admit)
            hub.append(Link(endpointID: id, direction: .incoming, isConnected: index % 2 == 0))
        }
        #expect(Self.refusal(star.outgoing(to: "ELSE", links: hub))?.code == .outOfOrderApiCall)
        let spoke = [Link(endpointID: "HUBB", direction: .outgoing, isConnected: true, nonce: 3)]
        #expect(star.incoming(from: "ELSE", nonce: 0, links: spoke) == .refuse(.topology))
        #expect(Self.refusal(star.outgoing(to: "HUB2", links: spoke))?.code == .outOfOrderApiCall)
    }

    static func refusal(_ decision: TopologyRules.OutgoingDecision) -> (code: NearbyError.Code, reason: String)? {
        if case .refuse(let code, let reason) = decision { return (code, reason) }
        return nil
    }
}
