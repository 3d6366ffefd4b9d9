import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import Testing

/// The default ``ResourceLimits`` let a star hub take a room full of spokes that all ask at once (the old default
/// of 16 pending endpoints refused 84 of 100).
struct PendingEndpointsDefaultTests {
    @Test("With the default limits a star hub takes 100 spokes requesting at the same time", .timeLimit(.minutes(5)))
    func hundredSimultaneousRequests() async throws {
        let count = 100
        let air = InMemoryMedium.Air()
        let hub = NearbyEngine(
            configuration: EngineLimitsTests.configuration(strategy: .star), mediums: [InMemoryMedium(air: air)],
            localEndpointID: "HUBB")
        let hubLog = EventLog(hub)
        try await hub.startAdvertising(endpointInfo: Array("hub".utf8))
        var spokes: [NearbyEngine] = []
        for index in 0..<count {
            let engine = NearbyEngine(
                configuration: EngineLimitsTests.configuration(strategy: .star), mediums: [InMemoryMedium(air: air)],
                localEndpointID: String(format: "S%03d", index))
            let log = EventLog(engine)
            try await engine.startDiscovery()
            _ = try await log.wait { if case .endpointFound = $0 { true } else { false } }
            spokes.append(engine)
        }
        // Nobody decides, so every one of them stays pending on the hub.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for spoke in spokes {
                group.addTask { try await spoke.requestConnection(to: "HUBB", endpointInfo: [1]) }
            }
            try await group.waitForAll()
        }
        let initiated = try await eventually(within: 60, "\(count) initiated connections on the hub") { () async -> Int? in
            let events = await hubLog.events
            let ids = Set(events.compactMap { event -> String? in
                if case .endpoint(.initiated(let info)) = event { info.endpointID } else { nil }
            })
            return ids.count == count ? ids.count : nil
        }
        #expect(initiated == count)
        #expect(await !hubLog.events.contains { if case .endpoint(.connectionFailed) = $0 { true } else { false } })
        await hub.shutdown()
        for spoke in spokes { await spoke.shutdown() }
    }
}
