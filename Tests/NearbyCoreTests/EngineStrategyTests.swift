import Foundation
import Logging
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// Strategies enforced by the engine over the in-memory medium: who finds whom, which requests are refused with
/// which status, and what the refused side sees.
struct EngineStrategyTests {
    /// One engine on `air` and the log of its events.
    struct Node {
        let engine: NearbyEngine
        let log: EventLog
        var id: String { engine.localEndpointID }

        init(_ id: String, _ strategy: Strategy, air: InMemoryMedium.Air, timeouts: EndpointSession.Timeouts = .init()) {
            var logger = Logger(label: "test")
            logger.logLevel = .critical
            let configuration = EngineConfiguration(
                serviceID: "com.example.strategy", strategy: strategy,
                receiveDirectory: FileManager.default.temporaryDirectory, timeouts: timeouts, logger: logger)
            engine = NearbyEngine(configuration: configuration, mediums: [InMemoryMedium(air: air)], localEndpointID: id)
            log = EventLog(engine)
        }

        func advertise() async throws { try await engine.startAdvertising(endpointInfo: Array(id.utf8)) }

        func discover(_ wanted: String...) async throws {
            try await engine.startDiscovery()
            for target in wanted { try await waitFound(target) }
        }

        func waitFound(_ target: String) async throws {
            _ = try await log.wait { if case .endpointFound(let e) = $0 { e.endpointID == target } else { false } }
        }

        func hasFound(_ target: String) async -> Bool {
            await log.events.contains { if case .endpointFound(let e) = $0 { e.endpointID == target } else { false } }
        }

        /// Events that name `endpointID` (any connection event).
        func mentions(_ endpointID: String) async -> Bool {
            await log.events.contains { event in
                switch event {
                case .endpoint(.initiated(let info)), .endpoint(.connected(let info)): info.endpointID == endpointID
                case .endpoint(.connectionFailed(let id, _)): id == endpointID
                case .endpoint(.rejected(let id, _)), .endpoint(.disconnected(let id, _)): id == endpointID
                default: false
                }
            }
        }
    }

    /// `requester` asks `target` (found already); both accept; returns once both are connected.
    static func connect(_ requester: Node, to target: Node) async throws {
        try await requester.engine.requestConnection(to: target.id, endpointInfo: Array(requester.id.utf8))
        _ = try await target.log.wait { EngineLimitsTests.isInitiated($0, requester.id) }
        _ = try await requester.log.wait { EngineLimitsTests.isInitiated($0, target.id) }
        try await target.engine.acceptConnection(requester.id)
        try await requester.engine.acceptConnection(target.id)
        for (node, peer) in [(requester, target.id), (target, requester.id)] {
            _ = try await node.log.wait {
                if case .endpoint(.connected(let info)) = $0 { info.endpointID == peer } else { false }
            }
        }
    }

    static func failure(of node: Node, _ endpointID: String) async throws -> NearbyError {
        let event = try await node.log.wait {
            if case .endpoint(.connectionFailed(let id, _)) = $0 { id == endpointID } else { false }
        }
        if case .endpoint(.connectionFailed(_, let error)) = event { return error }
        throw NearbyError(.unknown, "unreachable")
    }

    static func requestError(_ body: () async throws -> Void) async -> NearbyError.Code? {
        do {
            try await body()
            return nil
        } catch {
            return (error as? NearbyError)?.code ?? .unknown
        }
    }

    @Test("Star: the hub takes many spokes and makes no outgoing request; a spoke holds one connection", .timeLimit(.minutes(5)))
    func star() async throws {
        let air = InMemoryMedium.Air()
        let hub = Node("HUBB", .star, air: air)
        let spokes = ["SPK1", "SPK2", "SPK3"].map { Node($0, .star, air: air) }
        try await hub.advertise()
        for spoke in spokes {
            try await spoke.advertise()
            try await spoke.discover(hub.id)
            try await Self.connect(spoke, to: hub)
        }
        #expect(await hub.engine.connectedEndpoints() == ["SPK1", "SPK2", "SPK3"])

        // The hub, holding incoming connections, may not request one (Google: kOutOfOrderApiCall).
        try await hub.discover("SPK1")
        #expect(await Self.requestError { try await hub.engine.requestConnection(to: "SPK1", endpointInfo: [1]) }
            == .alreadyConnectedToEndpoint)
        #expect(await Self.requestError {
            try await hub.engine.requestConnection(
                route: .tcp(hosts: ["memory"], port: 1), medium: .wifiLAN, peerEndpointID: "ELSE", endpointInfo: [1])
        } == .outOfOrderApiCall)
        // A spoke connected to the hub may not request a second hub.
        try await spokes[0].waitFound("SPK2")
        #expect(await Self.requestError { try await spokes[0].engine.requestConnection(to: "SPK2", endpointInfo: [1]) }
            == .outOfOrderApiCall)
        // A spoke that also advertises refuses incoming requests: the requester fails at once, the spoke's app
        // never hears of it, and the hub keeps its spokes.
        let newcomer = Node("NEWW", .star, air: air)
        try await newcomer.discover("SPK2")
        try await newcomer.engine.requestConnection(to: "SPK2", endpointInfo: [2])
        #expect(try await Self.failure(of: newcomer, "SPK2").code == .endpointIoError)
        #expect(await !spokes[1].mentions("NEWW"))
        #expect(await spokes[1].engine.connectedEndpoints() == ["HUBB"])
        // The newcomer, refused, may still join the hub.
        try await newcomer.waitFound(hub.id)
        try await Self.connect(newcomer, to: hub)
        #expect(await hub.engine.connectedEndpoints() == ["NEWW", "SPK1", "SPK2", "SPK3"])
        try await spokes[2].engine.send(.bytes([3]), to: "HUBB", id: 33)
        _ = try await hub.log.wait { if case .endpoint(.bytesReceived("SPK3", 33, [3])) = $0 { true } else { false } }
    }

    @Test("Point-to-point: a second connection either way is refused; the first carries on", .timeLimit(.minutes(5)))
    func pointToPoint() async throws {
        let air = InMemoryMedium.Air()
        let advertiser = Node("ADVR", .pointToPoint, air: air)
        let discoverer = Node("DISC", .pointToPoint, air: air)
        let third = Node("THRD", .pointToPoint, air: air)
        try await advertiser.advertise()
        try await third.advertise()
        try await discoverer.discover("ADVR", "THRD")
        try await Self.connect(discoverer, to: advertiser)

        #expect(await Self.requestError { try await discoverer.engine.requestConnection(to: "ADVR", endpointInfo: [1]) }
            == .alreadyConnectedToEndpoint)
        #expect(await Self.requestError { try await discoverer.engine.requestConnection(to: "THRD", endpointInfo: [1]) }
            == .outOfOrderApiCall)
        try await third.discover("ADVR")
        try await third.engine.requestConnection(to: "ADVR", endpointInfo: [3])
        #expect(try await Self.failure(of: third, "ADVR").code == .endpointIoError)
        #expect(await !advertiser.mentions("THRD"))
        try await discoverer.engine.send(.bytes([9]), to: "ADVR", id: 9)
        _ = try await advertiser.log.wait { if case .endpoint(.bytesReceived("DISC", 9, [9])) = $0 { true } else { false } }

        // Once the first connection is gone, a new one is allowed at once.
        await discoverer.engine.disconnect(from: "ADVR")
        try await Self.connect(discoverer, to: third)
        #expect(await discoverer.engine.connectedEndpoints() == ["THRD"])
    }

    @Test("Cluster: every endpoint connects to every other, both ways", .timeLimit(.minutes(5)))
    func cluster() async throws {
        let air = InMemoryMedium.Air()
        let nodes = ["CLA1", "CLA2", "CLA3", "CLA4"].map { Node($0, .cluster, air: air) }
        for node in nodes { try await node.advertise() }
        for node in nodes { try await node.discover(contentsOf: nodes.map(\.id).filter { $0 != node.id }) }
        for (index, requester) in nodes.enumerated() {
            for target in nodes[(index + 1)...] {
                try await Self.connect(requester, to: target)
            }
        }
        for node in nodes {
            #expect(await node.engine.connectedEndpoints() == nodes.map(\.id).filter { $0 != node.id })
        }
        try await nodes[3].engine.send(.bytes([4]), to: "CLA1", id: 4)
        _ = try await nodes[0].log.wait { if case .endpoint(.bytesReceived("CLA4", 4, [4])) = $0 { true } else { false } }
    }

    @Test("An advertiser of another strategy is not found and cannot be requested", .timeLimit(.minutes(5)), arguments: Strategy.allCases)
    func otherStrategyIsInvisible(discovering: Strategy) async throws {
        let air = InMemoryMedium.Air()
        let others = Strategy.allCases.filter { $0 != discovering }
        let foreign = others.enumerated().map { Node("FOR\($0.offset)", $0.element, air: air) }
        for node in foreign { try await node.advertise() }
        let discoverer = Node("SEEK", discovering, air: air)
        try await discoverer.engine.startDiscovery()
        // Advertised after the foreign ones: once it is found, every earlier advertisement has been seen.
        let marker = Node("MARK", discovering, air: air)
        try await marker.advertise()
        try await discoverer.waitFound("MARK")
        for node in foreign {
            #expect(await !discoverer.hasFound(node.id))
            #expect(await Self.requestError { try await discoverer.engine.requestConnection(to: node.id, endpointInfo: [1]) }
                == .endpointUnknown)
        }
    }
}

extension EngineStrategyTests.Node {
    func discover(contentsOf wanted: [String]) async throws {
        try await engine.startDiscovery()
        for target in wanted { try await waitFound(target) }
    }
}
