import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import Testing

/// `ConnectionManager.connectedEndpoints` and sending one payload to several endpoints, on a star over the
/// in-memory medium (this tests the API, not a medium).
@Suite("Connected endpoints and sending to several", .timeLimit(.minutes(5)))
struct MultiEndpointSendTests {
    struct Member {
        let manager: ConnectionManager
        let log: EventLog
        var id: EndpointID { manager.localEndpointID }
    }

    /// A hub advertising, its spokes connected; the advertiser is kept (advertising stops when it goes).
    struct Star {
        let hub: Member
        let spokes: [Member]
        let directory: URL
        let advertiser: Advertiser

        /// Shuts every manager down (and keeps the advertiser alive until then).
        func finish() async {
            for member in [hub] + spokes { await member.manager.shutdown() }
            withExtendedLifetime(advertiser) {}
        }
    }

    static func member(_ air: InMemoryMedium.Air, _ directory: URL) -> Member {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var options = ConnectionOptions(receiveDirectory: directory, logger: logger)
        options.useInMemoryMediums([InMemoryMedium(air: air)])
        let manager = ConnectionManager(serviceID: "multi-send", strategy: .star, options: options)
        return Member(manager: manager, log: EventLog(manager.events))
    }

    static func waitFor(_ log: EventLog, _ what: String, _ match: @escaping (ConnectionEvent) -> Bool) async throws {
        try await log.wait(what) { event -> Bool? in match(event) ? true : nil }
    }

    /// A hub with `count` spokes connected to it.
    static func star(spokes count: Int) async throws -> Star {
        let air = InMemoryMedium.Air()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("multi-\(UUID().uuidString)")
        let hub = member(air, directory.appendingPathComponent("hub"))
        let advertiser = Advertiser(connectionManager: hub.manager)
        try await advertiser.startAdvertising(using: Data("hub".utf8))
        #expect(await hub.manager.connectedEndpoints.isEmpty)
        var spokes: [Member] = []
        for index in 0..<count {
            let spoke = member(air, directory.appendingPathComponent("spoke\(index)"))
            let discoverer = Discoverer(connectionManager: spoke.manager)
            try await discoverer.startDiscovery()
            try await Self.waitFor(spoke.log, "the hub") { if case .endpointFound(hub.id, _, _) = $0 { true } else { false } }
            try await discoverer.requestConnection(to: hub.id, using: Data("spoke \(index)".utf8))
            try await Self.waitFor(spoke.log, "its request") { if case .connectionRequested(hub.id, _, _, _) = $0 { true } else { false } }
            try await Self.waitFor(hub.log, "the spoke's request") {
                if case .connectionRequested(spoke.id, _, _, _) = $0 { true } else { false }
            }
            try await hub.manager.accept(spoke.id)
            try await spoke.manager.accept(hub.id)
            try await Self.waitFor(hub.log, "the spoke connected") {
                if case .stateChanged(spoke.id, .connected, _) = $0 { true } else { false }
            }
            spokes.append(spoke)
        }
        return Star(hub: hub, spokes: spokes, directory: directory, advertiser: advertiser)
    }

    @Test("connectedEndpoints lists the connected endpoints, sorted; a disconnected one leaves it")
    func connectedEndpoints() async throws {
        let star = try await Self.star(spokes: 3)
        let hub = star.hub
        let spokes = star.spokes
        #expect(await hub.manager.connectedEndpoints == spokes.map(\.id).sorted())
        #expect(await spokes[0].manager.connectedEndpoints == [hub.id])
        await spokes[1].manager.disconnect(from: hub.id)
        _ = try await eventually("the hub to drop \(spokes[1].id)") {
            await hub.manager.connectedEndpoints == [spokes[0].id, spokes[2].id].sorted() ? true : nil
        }
        #expect(await spokes[1].manager.connectedEndpoints.isEmpty)
        await star.finish()
    }

    @Test("send(_:toEach:) gives every connected endpoint the bytes under one ID and reports the others")
    func bytesToEach() async throws {
        let star = try await Self.star(spokes: 3)
        let hub = star.hub
        let spokes = star.spokes
        let message = Data("to everyone".utf8)
        let result = try await hub.manager.send(message, toEach: spokes.map(\.id) + ["NOPE", spokes[0].id], id: 77)
        #expect(result.payloadID == 77)
        #expect(result.started == spokes.map(\.id))
        #expect(result.failures.keys.sorted() == ["NOPE"])
        #expect(result.failures["NOPE"]?.code == .endpointUnknown)
        for spoke in spokes {
            try await Self.waitFor(spoke.log, "the bytes at \(spoke.id)") {
                if case .bytesReceived(hub.id, 77, message) = $0 { true } else { false }
            }
            try await Self.waitFor(hub.log, "success to \(spoke.id)") {
                if case .transferUpdate(spoke.id, 77, .success, _, true, _, _) = $0 { true } else { false }
            }
        }
        try await Self.waitFor(hub.log, "a failure update for NOPE") {
            if case .transferUpdate("NOPE", 77, .failure, _, true, _, _) = $0 { true } else { false }
        }
        // Listed twice, sent once.
        #expect(spokes[0].log.all.filter { if case .bytesReceived(_, 77, _) = $0 { true } else { false } }.count == 1)
        await star.finish()
    }

    @Test("send(_:toEach:) fails as a whole only when no endpoint could take the payload")
    func wholeFailure() async throws {
        let star = try await Self.star(spokes: 1)
        let hub = star.hub
        let spokes = star.spokes
        let unknown = await #expect(throws: NearbyError.self) {
            try await hub.manager.send(Data([1]), toEach: ["NOPE", "GONE"])
        }
        #expect(unknown?.code == .endpointUnknown)
        let empty = await #expect(throws: NearbyError.self) { try await hub.manager.send(Data([1]), toEach: []) }
        #expect(empty?.code == .invalidArgument)
        let tooLarge = await #expect(throws: NearbyError.self) {
            try await hub.manager.send(Data(count: 2_000_000), toEach: [spokes[0].id])
        }
        #expect(tooLarge?.code == .invalidArgument)
        #expect(!hub.log.contains { if case .transferUpdate(_, _, .failure, _, _, _, _) = $0 { true } else { false } })
        await star.finish()
    }

    @Test("sendResource(at:withName:toEach:) delivers the file intact to each endpoint")
    func fileToEach() async throws {
        let star = try await Self.star(spokes: 2)
        let hub = star.hub
        let spokes = star.spokes
        let directory = star.directory
        var generator = SeededGenerator(seed: 14)
        let content = Data(generator.bytes(200_000))
        let source = directory.appendingPathComponent("source.bin")
        try content.write(to: source)
        let result = try await hub.manager.sendResource(at: source, withName: "shared.bin", toEach: spokes.map(\.id))
        #expect(result.started == spokes.map(\.id) && result.failures.isEmpty)
        for spoke in spokes {
            let url = try await spoke.log.wait("the file at \(spoke.id)") { event -> URL? in
                if case .fileReceived(hub.id, result.payloadID, let url, _) = event { return url }
                return nil
            }
            #expect(try Data(contentsOf: url) == content)
        }
        await star.finish()
    }

    @Test("Google's callback send(_:to:) succeeds when one endpoint took it, fails when none could")
    func callbackForm() async throws {
        let star = try await Self.star(spokes: 2)
        let hub = star.hub
        let spokes = star.spokes
        let outcomes = LockedValue<[String: String]>([:])
        hub.manager.send(Data("some".utf8), to: [spokes[1].id, "NOPE"], id: 5) { error in
            outcomes.withLock { $0["some"] = error.map { "\(($0 as? NearbyError)?.code ?? .unknown)" } ?? "ok" }
        }
        hub.manager.send(Data("none".utf8), to: ["NOPE"], id: 6) { error in
            outcomes.withLock { $0["none"] = error.map { "\(($0 as? NearbyError)?.code ?? .unknown)" } ?? "ok" }
        }
        _ = try await eventually("both completion handlers") { outcomes.withLock { $0.count == 2 ? $0 : nil } }
        #expect(outcomes.withLock { $0 } == ["some": "ok", "none": "endpointUnknown"])
        try await Self.waitFor(spokes[1].log, "the bytes") { if case .bytesReceived(hub.id, 5, _) = $0 { true } else { false } }
        try await Self.waitFor(hub.log, "a failure update for NOPE") {
            if case .transferUpdate("NOPE", 5, .failure, _, true, _, _) = $0 { true } else { false }
        }
        await star.finish()
    }
}
