import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// Two endpoints requesting each other at the same moment (protocol reference §3.5), many times over, through
/// the real engine on the in-memory medium.
struct EngineTieBreakTests {
    typealias Node = EngineStrategyTests.Node

    /// What one request call returned: nothing, or the error code.
    static func outcome(_ body: @Sendable () async throws -> Void) async -> NearbyError.Code? {
        await EngineStrategyTests.requestError(body)
    }

    @Test("Simultaneous requests end in exactly one connection, 50 times in a row, and leave no session behind",
          .timeLimit(.minutes(5)), arguments: Strategy.allCases)
    func simultaneousRequests(strategy: Strategy) async throws {
        let air = InMemoryMedium.Air()
        // No linger after each round's disconnect: the rounds follow each other at once.
        var timeouts = EndpointSession.Timeouts()
        timeouts.disconnectDelay = .zero
        let a = Node("AAAA", strategy, air: air, timeouts: timeouts)
        let b = Node("BBBB", strategy, air: air, timeouts: timeouts)
        try await a.advertise()
        try await b.advertise()
        try await a.discover("BBBB")
        try await b.discover("AAAA")
        for round in 0..<50 {
            let seenA = await a.log.events.count
            let seenB = await b.log.events.count
            async let fromA = Self.outcome { try await a.engine.requestConnection(to: "BBBB", endpointInfo: [1]) }
            async let fromB = Self.outcome { try await b.engine.requestConnection(to: "AAAA", endpointInfo: [2]) }
            let codes = await [fromA, fromB]
            // A request may fail at once only because the other side's request got in first (or won the tie-break
            // while the channel was opening); never both.
            #expect(codes.allSatisfy { $0 == nil || $0 == .alreadyConnectedToEndpoint || $0 == .endpointIoError },
                    "round \(round): \(codes)")
            #expect(codes.contains { $0 == nil }, "round \(round): both requests failed locally: \(codes)")

            let infoA = try await Self.initiated(a, after: seenA)
            let infoB = try await Self.initiated(b, after: seenB)
            #expect(infoA.endpointID == "BBBB" && infoB.endpointID == "AAAA")
            #expect(infoA.isIncoming != infoB.isIncoming, "round \(round): both sides think they \(infoA.isIncoming ? "advertised" : "requested")")
            #expect(infoA.verificationDigits == infoB.verificationDigits)
            try await a.engine.acceptConnection("BBBB")
            try await b.engine.acceptConnection("AAAA")
            _ = try await eventually("round \(round): one connection on each side") {
                let connected = await (a.engine.connectedEndpoints(), b.engine.connectedEndpoints())
                let open = await (a.engine.openSessionCount, b.engine.openSessionCount)
                return connected == (["BBBB"], ["AAAA"]) && open == (1, 1) ? true : nil
            }
            // Exactly one connection was offered to each app this round, and the side whose request went on heard
            // of no failure (the request it refused is not reported; the other side's own request failing is).
            #expect(await Self.initiatedCount(a, after: seenA) == 1)
            #expect(await Self.initiatedCount(b, after: seenB) == 1)
            let (requester, seen) = infoA.isIncoming ? (b, seenB) : (a, seenA)
            #expect(await !requester.log.events.dropFirst(seen).contains {
                // A channel closed before it said who it is (the other request, dropped while opening) reports
                // no endpoint ID; the API layer ignores those.
                if case .endpoint(.connectionFailed(.some, _)) = $0 { true } else { false }
            }, "round \(round): \(requester.id) reported a failure although its request went on")

            await a.engine.disconnect(from: "BBBB")
            _ = try await eventually("round \(round): no session left") {
                let open = await (a.engine.openSessionCount, b.engine.openSessionCount)
                return open == (0, 0) ? true : nil
            }
        }
    }

    /// The first `.initiated` after the first `after` events.
    static func initiated(_ node: Node, after: Int) async throws -> ConnectionInfo {
        _ = try await eventually("an initiated connection at \(node.id)") {
            await initiatedCount(node, after: after) > 0 ? true : nil
        }
        let events = await node.log.events.dropFirst(after)
        for case .endpoint(.initiated(let info)) in events { return info }
        throw NearbyError(.unknown, "unreachable")
    }

    static func initiatedCount(_ node: Node, after: Int) async -> Int {
        await node.log.events.dropFirst(after).reduce(0) { count, event in
            if case .endpoint(.initiated) = event { return count + 1 }
            return count
        }
    }
}
