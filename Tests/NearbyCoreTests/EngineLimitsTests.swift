import Foundation
import Logging
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// The engine's limits (``ResourceLimits``) over the in-memory medium: write deadlines, endpoint caps, the
/// decision deadline, the clamp on peer keep-alive timeouts and the bounded event buffer.
struct EngineLimitsTests {
    // MARK: - Write deadlines

    /// A channel whose writes never complete stands for a TCP peer that stopped reading and for a BLE peer that
    /// grants no more L2CAP credits: both leave our write suspended (BLE: `BLEHost.sendSDU` waiting for credits,
    /// failed by closing the channel, as the in-memory channel does).
    @Test("A write that never completes drops the endpoint with a timeout that names the stalled write", .timeLimit(.minutes(5)))
    func stalledWriteDropsEndpoint() async throws {
        var limits = ResourceLimits()
        limits.writeTimeout = .seconds(1)
        let clock = ManualClock()
        let pair = EnginePair(limits: limits, clock: clock)
        _ = try await pair.connect()
        pair.discovererMedium.stallOpenedChannelWrites()
        try await pair.discoverer.send(.bytes([1, 2, 3]), to: "ADVR", id: 31)
        _ = try await eventually("the stuck write") { pair.discovererMedium.stalledWriteCount > 0 ? true : nil }
        // Each side sleeps on its keep-alive send, keep-alive timeout and write deadline timers.
        await clock.waitForSleepers(atLeast: 6)
        // The keep-alive timeout is 30 s away, so only the write deadline can end this.
        clock.advance(by: .seconds(1))
        let event = try await pair.discovererLog.wait(timeout: .seconds(20)) {
            if case .endpoint(.disconnected) = $0 { true } else { false }
        }
        guard case .endpoint(.disconnected(_, let error)) = event else {
            Issue.record("unexpected \(event)")
            return
        }
        let stalled = try #require(error)
        #expect(stalled.code == .timeout)
        #expect(stalled.message.contains("write"), "\(stalled)")
    }

    enum Exit: String, CaseIterable, Sendable {
        case disconnect, reject, accept, shutdown
    }

    @Test("disconnect, accept, reject and shutdown return within 5 s while a write is stuck", .timeLimit(.minutes(5)), arguments: Exit.allCases)
    func exitsDoNotWaitForStuckWrites(_ exit: Exit) async throws {
        var limits = ResourceLimits()
        limits.writeTimeout = .seconds(600)
        // Frequent keep-alives make the stuck write happen soon; the timeout is far away.
        let pair = EnginePair(keepAlive: KeepAliveSettings(interval: .milliseconds(100), timeout: .seconds(600)), limits: limits)
        switch exit {
        case .disconnect, .shutdown:
            _ = try await pair.connect()
        case .accept, .reject:
            try await pair.advertiser.startAdvertising(endpointInfo: [1])
            try await pair.discoverer.startDiscovery()
            _ = try await pair.discovererLog.wait { if case .endpointFound = $0 { true } else { false } }
            try await pair.discoverer.requestConnection(to: "ADVR", endpointInfo: [2])
            _ = try await pair.discovererLog.wait { if case .endpoint(.initiated) = $0 { true } else { false } }
        }
        pair.discovererMedium.stallOpenedChannelWrites()
        if exit == .disconnect || exit == .shutdown {
            try await pair.discoverer.send(.bytes([1, 2, 3]), to: "ADVR")
        }
        let medium = pair.discovererMedium
        _ = try await eventually(within: 20, "a stuck write") { medium.stalledWriteCount > 0 ? true : nil }
        let discoverer = pair.discoverer
        try await withTestTimeout(5, "\(exit) with a stuck write") {
            switch exit {
            case .disconnect: await discoverer.disconnect(from: "ADVR")
            case .reject: try await discoverer.rejectConnection("ADVR")
            case .accept: try await discoverer.acceptConnection("ADVR")
            case .shutdown: await discoverer.shutdown()
            }
        }
    }

    // MARK: - Endpoint caps

    @Test("Incoming connections over maxPendingEndpoints and maxEndpoints are refused; the others are untouched", .timeLimit(.minutes(5)))
    func endpointCaps() async throws {
        var limits = ResourceLimits()
        limits.maxPendingEndpoints = 1
        limits.maxEndpoints = 2
        let air = InMemoryMedium.Air()
        let hub = NearbyEngine(
            configuration: Self.configuration(strategy: .star, limits: limits), mediums: [InMemoryMedium(air: air)],
            localEndpointID: "HUBB")
        let hubLog = EventLog(hub)
        try await hub.startAdvertising(endpointInfo: Array("hub".utf8))
        var spokes: [(engine: NearbyEngine, log: EventLog)] = []
        for name in ["SPK1", "SPK2", "SPK3"] {
            let engine = NearbyEngine(
                configuration: Self.configuration(strategy: .star), mediums: [InMemoryMedium(air: air)], localEndpointID: name)
            let log = EventLog(engine)
            try await engine.startDiscovery()
            _ = try await log.wait { if case .endpointFound = $0 { true } else { false } }
            spokes.append((engine, log))
        }

        // SPK1 waits for a decision: SPK2 is refused (one pending endpoint at most).
        try await spokes[0].engine.requestConnection(to: "HUBB", endpointInfo: [1])
        _ = try await hubLog.wait { Self.isInitiated($0, "SPK1") }
        try await spokes[1].engine.requestConnection(to: "HUBB", endpointInfo: [2])
        _ = try await spokes[1].log.wait { if case .endpoint(.connectionFailed) = $0 { true } else { false } }
        #expect(await !hubLog.events.contains { Self.isInitiated($0, "SPK2") })

        // SPK1 is undisturbed and connects; now SPK2 gets in.
        try await Self.acceptBoth(hub, hubLog, spokes[0].engine, spokes[0].log, "SPK1")
        try await spokes[1].engine.requestConnection(to: "HUBB", endpointInfo: [2])
        try await Self.acceptBoth(hub, hubLog, spokes[1].engine, spokes[1].log, "SPK2")

        // Two endpoints: SPK3 is refused, the connected two stay.
        try await spokes[2].engine.requestConnection(to: "HUBB", endpointInfo: [3])
        _ = try await spokes[2].log.wait { if case .endpoint(.connectionFailed) = $0 { true } else { false } }
        #expect(await !hubLog.events.contains { Self.isInitiated($0, "SPK3") })
        #expect(await hub.connectedEndpoints() == ["SPK1", "SPK2"])
        try await spokes[0].engine.send(.bytes([7]), to: "HUBB", id: 41)
        _ = try await hubLog.wait { if case .endpoint(.bytesReceived("SPK1", 41, [7])) = $0 { true } else { false } }
    }

    // MARK: - Decision deadline

    @Test("A connection nobody decides on is rejected after pendingDecisionTimeout; the peer sees a rejection", .timeLimit(.minutes(5)))
    func pendingDecisionExpires() async throws {
        var limits = ResourceLimits()
        limits.pendingDecisionTimeout = .seconds(1)
        // The drain bound is far from the linger after a rejection, so the clock tells which one is armed.
        var timeouts = EndpointSession.Timeouts()
        timeouts.drainBeforeClose = .seconds(10)
        let clock = ManualClock()
        // Only the advertiser's deadline is short, so that it is the one to reject.
        let pair = EnginePair(timeouts: timeouts, limits: limits, discovererLimits: ResourceLimits(), clock: clock)
        try await pair.advertiser.startAdvertising(endpointInfo: [1])
        try await pair.discoverer.startDiscovery()
        _ = try await pair.discovererLog.wait { if case .endpointFound = $0 { true } else { false } }
        try await pair.discoverer.requestConnection(to: "ADVR", endpointInfo: [2])
        _ = try await pair.advertiserLog.wait { if case .endpoint(.initiated) = $0 { true } else { false } }
        _ = try await pair.discovererLog.wait { if case .endpoint(.initiated) = $0 { true } else { false } }
        // Neither app decides. Each side sleeps on its decision, keep-alive and write deadline timers.
        await clock.waitForSleepers(atLeast: 8)
        clock.advance(by: .seconds(1))
        _ = try await pair.advertiserLog.wait(timeout: .seconds(20)) {
            if case .endpoint(.rejected(_, false)) = $0 { true } else { false }
        }
        // The advertiser lingers (once its rejection is written) so that the discoverer reads it, then closes.
        let linger = timeouts.rejectedCloseDelay
        _ = try await eventually("the linger after the rejection") {
            clock.nextDeadline == clock.now.advanced(by: linger) ? true : nil
        }
        clock.advance(by: linger)
        _ = try await pair.discovererLog.wait(timeout: .seconds(20)) {
            if case .endpoint(.rejected(_, true)) = $0 { true } else { false }
        }
    }

    // MARK: - Keep-alive clamp

    @Test("A peer asking for a huge keep-alive timeout gets the clamped one: going silent drops it soon", .timeLimit(.minutes(5)))
    func peerKeepAliveTimeoutIsClamped() async throws {
        var limits = ResourceLimits()
        limits.peerKeepAliveTimeoutRange = .seconds(1) ... .seconds(2)
        let clock = ManualClock()
        let pair = EnginePair(
            limits: limits, discovererKeepAlive: KeepAliveSettings(interval: .seconds(3000), timeout: .seconds(6000)),
            clock: clock)
        _ = try await pair.connect()
        pair.discovererMedium.freezeOpenedChannels()
        // Each side sleeps on its keep-alive send, keep-alive timeout and write deadline timers.
        await clock.waitForSleepers(atLeast: 6)
        clock.advance(by: .seconds(2))
        let event = try await pair.advertiserLog.wait(timeout: .seconds(20)) {
            if case .endpoint(.disconnected) = $0 { true } else { false }
        }
        guard case .endpoint(.disconnected(_, let error)) = event else {
            Issue.record("unexpected \(event)")
            return
        }
        #expect(error?.code == .timeout)
    }

    @Test("Clamping keeps the interval below the timeout and not below 100 ms", .timeLimit(.minutes(5)))
    func clampKeepsIntervalBelowTimeout() {
        let asked = KeepAliveSettings(interval: .seconds(3000), timeout: .seconds(6000))
        let clamped = asked.clamped(timeoutTo: .seconds(1) ... .seconds(2))
        #expect(clamped.timeout == .seconds(2))
        #expect(clamped.interval == .seconds(1))
        let tiny = KeepAliveSettings(interval: .milliseconds(1), timeout: .milliseconds(20))
        let raised = tiny.clamped(timeoutTo: .seconds(1) ... .seconds(300))
        #expect(raised.timeout == .seconds(1))
        #expect(raised.interval == KeepAliveSettings.minimumPeerInterval)
        let frantic = KeepAliveSettings(interval: .milliseconds(1), timeout: .seconds(10))
        #expect(frantic.clamped(timeoutTo: .seconds(1) ... .seconds(300)).interval == KeepAliveSettings.minimumPeerInterval)
        #expect(KeepAliveSettings.default.clamped(timeoutTo: .seconds(1) ... .seconds(300)) == .default)
    }

    // MARK: - Event buffer

    @Test("Engine events are buffered up to maxBufferedEvents; the oldest are dropped when nobody reads", .timeLimit(.minutes(5)))
    func eventBufferIsBounded() async throws {
        var limits = ResourceLimits()
        limits.maxBufferedEvents = 5
        let air = InMemoryMedium.Air()
        var advertisers: [NearbyEngine] = []
        for index in 0..<20 {
            let engine = NearbyEngine(
                configuration: Self.configuration(strategy: .cluster), mediums: [InMemoryMedium(air: air)],
                localEndpointID: String(format: "A%03d", index))
            try await engine.startAdvertising(endpointInfo: [UInt8(index)])
            advertisers.append(engine)
        }
        let discoverer = NearbyEngine(
            configuration: Self.configuration(strategy: .cluster, limits: limits), mediums: [InMemoryMedium(air: air)],
            localEndpointID: "DISC")
        try await discoverer.startDiscovery()
        _ = try await eventually(within: 20, "20 endpoints found") {
            await discoverer.discoveredEndpoints.count == 20 ? true : nil
        }
        // A last event, after the 20 found ones, then read what is left.
        await advertisers[0].stopAdvertising()
        _ = try await eventually(within: 20, "one endpoint lost") {
            await discoverer.discoveredEndpoints.count == 19 ? true : nil
        }
        var found = 0
        for await event in discoverer.events {
            if case .endpointLost = event { break }
            found += 1
        }
        #expect(found <= 4, "\(found) events were buffered past the limit of 5")
    }

    // MARK: - Helpers

    static func configuration(strategy: Strategy, limits: ResourceLimits = .init()) -> EngineConfiguration {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return EngineConfiguration(
            serviceID: "com.example.limits", strategy: strategy,
            receiveDirectory: FileManager.default.temporaryDirectory, limits: limits, logger: logger)
    }

    static func isInitiated(_ event: EngineEvent, _ endpointID: String) -> Bool {
        if case .endpoint(.initiated(let info)) = event { return info.endpointID == endpointID }
        return false
    }

    static func acceptBoth(
        _ hub: NearbyEngine, _ hubLog: EventLog, _ spoke: NearbyEngine, _ spokeLog: EventLog, _ spokeID: String
    ) async throws {
        _ = try await hubLog.wait { isInitiated($0, spokeID) }
        _ = try await spokeLog.wait { isInitiated($0, "HUBB") }
        try await hub.acceptConnection(spokeID)
        try await spoke.acceptConnection("HUBB")
        _ = try await hubLog.wait {
            if case .endpoint(.connected(let info)) = $0 { info.endpointID == spokeID } else { false }
        }
    }
}
