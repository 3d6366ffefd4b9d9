import Foundation
import Logging
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

/// Collects an engine's events and waits for the ones a test needs.
actor EventLog {
    private(set) var events: [EngineEvent] = []

    init(_ engine: NearbyEngine) {
        Task { for await event in engine.events { await self.append(event) } }
    }

    private func append(_ event: EngineEvent) {
        events.append(event)
    }

    /// The first event (already seen or coming) that matches, polled until `timeout` passes.
    func wait(timeout: Duration = .seconds(10), _ predicate: @escaping @Sendable (EngineEvent) -> Bool) async throws -> EngineEvent {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let event = events.first(where: predicate) { return event }
            guard ContinuousClock.now < deadline else {
                throw NearbyError(.timeout, "event not seen within \(timeout); saw \(events.count) events")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    func updates(_ payloadID: PayloadID, outgoing: Bool) -> [PayloadTransferUpdate] {
        events.compactMap {
            if case .endpoint(.transferUpdate(_, let update, let isOutgoing)) = $0, update.payloadID == payloadID,
                isOutgoing == outgoing
            {
                return update
            }
            return nil
        }
    }
}

extension EndpointSession.Timeouts {
    /// The protocol's defaults with auto-reconnect off: for tests of what ends a connection (keep-alive silence,
    /// stalled writes), which a swift-nearby pair would otherwise ride out by reconnecting (docs/LINK-SAFETY.md).
    static var noReconnect: Self {
        var timeouts = Self()
        timeouts.autoReconnectWindow = .zero
        return timeouts
    }
}

/// Two engines on one in-memory air: an advertiser and a discoverer.
struct EnginePair {
    let advertiser: NearbyEngine
    let discoverer: NearbyEngine
    let advertiserLog: EventLog
    let discovererLog: EventLog
    let receiveDirectory: URL
    let discovererMedium: InMemoryMedium
    /// The discoverer's upgrade medium, when the pair can upgrade.
    let discovererUpgradeMedium: InMemoryUpgradeMedium?
    /// The advertiser's upgrade medium, when the pair can upgrade.
    let advertiserUpgradeMedium: InMemoryUpgradeMedium?

    /// Creates the pair. With `upgradeBeforeConnecting`, both connect over an in-memory "BLE" medium and can
    /// upgrade to an in-memory "Wi-Fi LAN" one; the discoverer runs the closure before each upgrade connection.
    /// Both engines' timers sleep on `clock` (a `ManualClock` lets the test move time).
    init(
        keepAlive: KeepAliveSettings = .default, timeouts: EndpointSession.Timeouts = .init(),
        limits: ResourceLimits = .init(), discovererKeepAlive: KeepAliveSettings? = nil,
        discovererLimits: ResourceLimits? = nil, clock: any Clock<Duration> = ContinuousClock(),
        air: InMemoryMedium.Air = InMemoryMedium.Air(),
        upgradeBeforeConnecting: (@Sendable () async throws -> Void)? = nil
    ) {
        receiveDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-core-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: receiveDirectory, withIntermediateDirectories: true)
        var logger = Logger(label: "test")
        // NEARBY_TEST_LOG=debug (or trace, info, …) prints the engines' log while debugging a test.
        logger.logLevel = ProcessInfo.processInfo.environment["NEARBY_TEST_LOG"].flatMap { Logger.Level(rawValue: $0) } ?? .critical
        let configuration = EngineConfiguration(
            serviceID: "com.example.test", strategy: .pointToPoint, receiveDirectory: receiveDirectory,
            keepAlive: keepAlive, timeouts: timeouts, limits: limits, logger: logger, clock: clock)
        var discovererConfiguration = configuration
        discovererConfiguration.keepAlive = discovererKeepAlive ?? keepAlive
        discovererConfiguration.limits = discovererLimits ?? limits
        if let upgradeBeforeConnecting {
            let advertiserUpgrade = InMemoryUpgradeMedium(air: air)
            let discovererUpgrade = InMemoryUpgradeMedium(air: air, beforeConnecting: upgradeBeforeConnecting)
            advertiserUpgradeMedium = advertiserUpgrade
            discovererUpgradeMedium = discovererUpgrade
            advertiser = NearbyEngine(
                configuration: configuration, mediums: [InMemoryMedium(air: air, kind: .ble), advertiserUpgrade],
                localEndpointID: "ADVR")
            discovererMedium = InMemoryMedium(air: air, kind: .ble)
            discoverer = NearbyEngine(
                configuration: discovererConfiguration, mediums: [discovererMedium, discovererUpgrade],
                localEndpointID: "DISC")
        } else {
            advertiserUpgradeMedium = nil
            discovererUpgradeMedium = nil
            advertiser = NearbyEngine(configuration: configuration, mediums: [InMemoryMedium(air: air)], localEndpointID: "ADVR")
            discovererMedium = InMemoryMedium(air: air)
            discoverer = NearbyEngine(
                configuration: discovererConfiguration, mediums: [discovererMedium], localEndpointID: "DISC")
        }
        advertiserLog = EventLog(advertiser)
        discovererLog = EventLog(discoverer)
    }

    /// Advertises, discovers, requests, accepts on both sides; returns both sides' connection info.
    func connect() async throws -> (advertiser: ConnectionInfo, discoverer: ConnectionInfo) {
        try await advertiser.startAdvertising(endpointInfo: Array("advertiser".utf8), only: [discovererMedium.kind])
        try await discoverer.startDiscovery(only: [discovererMedium.kind])
        _ = try await discovererLog.wait { if case .endpointFound(let e) = $0 { e.endpointID == "ADVR" } else { false } }
        try await discoverer.requestConnection(to: "ADVR", endpointInfo: Array("discoverer".utf8))
        guard case .endpoint(.initiated(let advertiserInfo)) = try await advertiserLog.wait({
            if case .endpoint(.initiated) = $0 { true } else { false }
        }), case .endpoint(.initiated(let discovererInfo)) = try await discovererLog.wait({
            if case .endpoint(.initiated) = $0 { true } else { false }
        }) else { throw NearbyError(.unknown, "unreachable") }
        try await advertiser.acceptConnection(advertiserInfo.endpointID)
        try await discoverer.acceptConnection(discovererInfo.endpointID)
        _ = try await advertiserLog.wait { if case .endpoint(.connected) = $0 { true } else { false } }
        _ = try await discovererLog.wait { if case .endpoint(.connected) = $0 { true } else { false } }
        return (advertiserInfo, discovererInfo)
    }
}

func isFinal(_ status: TransferStatus) -> Bool { status != .inProgress }
