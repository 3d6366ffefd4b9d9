import Foundation
import NearbyConnections
import NearbyTestSupport
import Testing

extension Peer {
    /// A manager on the real Wi-Fi LAN medium with `strategy`.
    init(_ scratch: Scratch, serviceID: String, strategy: Strategy) throws {
        var options = ConnectionOptions(receiveDirectory: try scratch.directory("received-\(UUID().uuidString.prefix(6))"))
        options.logger.logLevel = .warning
        manager = ConnectionManager(serviceID: serviceID, strategy: strategy, options: options)
        log = EventLog(manager.events)
        scratch.track(manager)
    }
}

extension WiFiLANIntegration {
    /// Strategies over Avahi and TCP: who finds whom, and simultaneous requests.
    @Suite("Strategies over Wi-Fi LAN", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct StrategyTests {
        @Test("an advertiser of another strategy is not found over DNS-SD and cannot be requested")
        func otherStrategyIsInvisible() async throws {
            try await withScratch(timeout: 60, "strategies over DNS-SD") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("strategy")
                let star = try Peer(scratch, serviceID: serviceID, strategy: .star)
                let cluster = try Peer(scratch, serviceID: serviceID, strategy: .cluster)
                try await star.advertise("star hub", scratch)
                try await cluster.advertise("cluster member", scratch)
                // A star discoverer finds the star hub: it is on the air.
                let spoke = try Peer(scratch, serviceID: serviceID, strategy: .star)
                try await spoke.discover(star.manager.localEndpointID, scratch)
                // A cluster discoverer finds the cluster member and not the hub.
                let seeker = try Peer(scratch, serviceID: serviceID, strategy: .cluster)
                try await seeker.discover(cluster.manager.localEndpointID, scratch)
                let hubID = star.manager.localEndpointID
                #expect(!seeker.log.contains { if case .endpointFound(hubID, _, _) = $0 { true } else { false } })
                #expect(!spoke.log.contains {
                    if case .endpointFound(cluster.manager.localEndpointID, _, _) = $0 { true } else { false }
                })
                let error = await #expect(throws: NearbyError.self) {
                    try await Discoverer(connectionManager: seeker.manager)
                        .requestConnection(to: hubID, using: Data("seeker".utf8))
                }
                #expect(error?.code == .endpointUnknown)
            }
        }

        @Test("simultaneous requests over TCP end in exactly one connection, 5 rounds, no session left")
        func simultaneousRequests() async throws {
            try await withScratch(timeout: 180, "simultaneous requests over TCP") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("tiebreak")
                let a = try Peer(scratch, serviceID: serviceID, strategy: .cluster)
                let b = try Peer(scratch, serviceID: serviceID, strategy: .cluster)
                try await a.advertise("a", scratch)
                try await b.advertise("b", scratch)
                let aID = a.manager.localEndpointID
                let bID = b.manager.localEndpointID
                try await a.discover(bID, scratch)
                try await b.discover(aID, scratch)
                let discovererA = Discoverer(connectionManager: a.manager)
                let discovererB = Discoverer(connectionManager: b.manager)
                scratch.keep(discovererA)
                scratch.keep(discovererB)
                for round in 0..<5 {
                    let seenA = a.log.all.count
                    let seenB = b.log.all.count
                    async let fromA: Void = discovererA.requestConnection(to: bID, using: Data("a".utf8))
                    async let fromB: Void = discovererB.requestConnection(to: aID, using: Data("b".utf8))
                    // One of the two calls may fail at once (the other request got in first, or won while the
                    // channel was opening); the outcome is checked on the connections.
                    let outcomes = (try? await fromA, try? await fromB)
                    _ = outcomes
                    let requestA = try await Self.request(a, after: seenA, round)
                    let requestB = try await Self.request(b, after: seenB, round)
                    #expect(requestA.id == bID && requestB.id == aID)
                    #expect(requestA.isIncoming != requestB.isIncoming, "round \(round)")
                    #expect(requestA.code == requestB.code)
                    try await a.manager.accept(bID)
                    try await b.manager.accept(aID)
                    _ = try await eventually(within: 30, "round \(round): one connection each") {
                        let connected = await (a.manager.connectedEndpoints, b.manager.connectedEndpoints)
                        let open = await (a.manager.openConnectionCount, b.manager.openConnectionCount)
                        return connected == ([bID], [aID]) && open == (1, 1) ? true : nil
                    }
                    #expect(Self.requestCount(a, after: seenA) == 1 && Self.requestCount(b, after: seenB) == 1)
                    await a.manager.disconnect(from: bID)
                    _ = try await eventually(within: 30, "round \(round): no session left") {
                        let open = await (a.manager.openConnectionCount, b.manager.openConnectionCount)
                        return open == (0, 0) ? true : nil
                    }
                }
            }
        }

        @Test("a point-to-point advertiser with a connection refuses another at once; the first carries on")
        func pointToPointRefusal() async throws {
            try await withScratch(timeout: 90, "point-to-point refusal over TCP") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("p2p-refusal")
                let advertiser = try Peer(scratch, serviceID: serviceID, strategy: .pointToPoint)
                let first = try Peer(scratch, serviceID: serviceID, strategy: .pointToPoint)
                let second = try Peer(scratch, serviceID: serviceID, strategy: .pointToPoint)
                try await advertiser.advertise("only one", scratch)
                let pair = try await ConnectedPair.connect(advertiser: advertiser, discoverer: first, scratch)
                let advertiserID = try await second.discoverAndRequest(advertiser, as: "second", scratch)
                let error = try await second.waitForState(.disconnected, of: advertiserID)
                #expect(error?.code == .endpointIoError)
                #expect(!advertiser.log.contains {
                    if case .connectionRequested(_, let context, _, _) = $0 { context == Data("second".utf8) } else { false }
                })
                #expect(await advertiser.manager.connectedEndpoints == [pair.discovererID])
                try await first.manager.send(Data("still here".utf8), to: pair.advertiserID)
                try await advertiser.log.wait("bytes from the first") { event -> Bool? in
                    if case .bytesReceived(_, _, Data("still here".utf8)) = event { return true }
                    return nil
                }
            }
        }

        /// The first connection request after `after` events: who, whether incoming, and its code.
        static func request(_ peer: Peer, after: Int, _ round: Int) async throws
            -> (id: EndpointID, isIncoming: Bool, code: VerificationCode)
        {
            try await eventually(within: 30, "round \(round): a connection request") {
                () -> (id: EndpointID, isIncoming: Bool, code: VerificationCode)? in
                for case .connectionRequested(let id, _, let code, let isIncoming) in peer.log.all.dropFirst(after) {
                    return (id, isIncoming, code)
                }
                return nil
            }
        }

        static func requestCount(_ peer: Peer, after: Int) -> Int {
            peer.log.all.dropFirst(after).filter { if case .connectionRequested = $0 { true } else { false } }.count
        }
    }
}
