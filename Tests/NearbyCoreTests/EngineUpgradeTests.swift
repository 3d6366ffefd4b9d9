import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// Bandwidth upgrade through the engine: two engines connect over an in-memory "BLE" medium and move to an
/// in-memory "Wi-Fi LAN" one (the real BLE → Wi-Fi LAN test is in NearbyBLETests).
@Suite("Engine bandwidth upgrade", .timeLimit(.minutes(5)))
struct EngineUpgradeTests {
    @Test("Streams flowing both ways during the upgrade arrive whole and in order on the new medium")
    func upgradeUnderStreams() async throws {
        let latch = Latch()
        let pair = EnginePair(upgradeBeforeConnecting: { await latch.wait() })
        _ = try await pair.connect()
        let fromDiscoverer = PatternFeed(seed: 3)
        let fromAdvertiser = PatternFeed(seed: 5)
        try await pair.discoverer.send(.stream(next: { await fromDiscoverer.next() }), to: "ADVR", id: 21)
        try await pair.advertiser.send(.stream(next: { await fromAdvertiser.next() }), to: "DISC", id: 22)
        let atAdvertiser = try await Self.verify(stream: 21, from: pair.advertiserLog, seed: 3)
        let atDiscoverer = try await Self.verify(stream: 22, from: pair.discovererLog, seed: 5)

        // Both streams are moving over "BLE" before the upgrade goes on.
        _ = try await eventually("both streams to move 50 KB") {
            let a = await fromDiscoverer.produced
            let b = await fromAdvertiser.produced
            return a > 50_000 && b > 50_000 ? true : nil
        }
        #expect(await pair.advertiserLog.events.contains(where: Self.isMediumChange) == false)
        await latch.open()
        for log in [pair.advertiserLog, pair.discovererLog] {
            guard case .endpoint(.mediumChanged(_, let medium)) = try await log.wait(Self.isMediumChange) else {
                Issue.record("not a medium change"); return
            }
            #expect(medium == .wifiLAN)
        }
        await fromDiscoverer.finish(after: 300_000)
        await fromAdvertiser.finish(after: 300_000)
        let receivedAtAdvertiser = try await atAdvertiser.value
        let receivedAtDiscoverer = try await atDiscoverer.value
        #expect(receivedAtAdvertiser == (await fromDiscoverer.produced))
        #expect(receivedAtDiscoverer == (await fromAdvertiser.produced))
        for (log, id) in [(pair.discovererLog, PayloadID(21)), (pair.advertiserLog, PayloadID(22))] {
            _ = try await log.wait {
                if case .endpoint(.transferUpdate(_, let update, true)) = $0 {
                    update.payloadID == id && update.status == .success
                } else { false }
            }
        }
        #expect(pair.advertiserUpgradeMedium?.openListeners == 0)

        // The upgraded connection carries new payloads both ways.
        try await pair.discoverer.send(.bytes(Array("after".utf8)), to: "ADVR", id: 23)
        try await pair.advertiser.send(.bytes(Array("reply".utf8)), to: "DISC", id: 24)
        _ = try await pair.advertiserLog.wait { if case .endpoint(.bytesReceived(_, 23, _)) = $0 { true } else { false } }
        _ = try await pair.discovererLog.wait { if case .endpoint(.bytesReceived(_, 24, _)) = $0 { true } else { false } }
        #expect(await pair.discoverer.connectedEndpoints() == ["ADVR"])
        await pair.discoverer.shutdown()
        await pair.advertiser.shutdown()
    }

    @Test("A failed upgrade leaves the connection working on its first medium")
    func failedUpgradeKeepsConnection() async throws {
        let pair = EnginePair(upgradeBeforeConnecting: {
            throw NearbyError(.endpointIoError, "the LAN is unreachable")
        })
        _ = try await pair.connect()
        let attempts = try #require(pair.discovererUpgradeMedium)
        let listeners = try #require(pair.advertiserUpgradeMedium)
        _ = try await eventually("the upgrade attempt") { attempts.connectAttempts.withLock { $0 } == 1 ? true : nil }
        // The discoverer answered UPGRADE_FAILURE; the advertiser stops listening and stays.
        _ = try await eventually("the listener to stop") { listeners.openListeners == 0 ? true : nil }
        try await pair.discoverer.send(.bytes(Array("still here".utf8)), to: "ADVR", id: 31)
        try await pair.advertiser.send(.bytes(Array("me too".utf8)), to: "DISC", id: 32)
        _ = try await pair.advertiserLog.wait { if case .endpoint(.bytesReceived(_, 31, _)) = $0 { true } else { false } }
        _ = try await pair.discovererLog.wait { if case .endpoint(.bytesReceived(_, 32, _)) = $0 { true } else { false } }
        #expect(await pair.advertiserLog.events.contains(where: Self.isMediumChange) == false)
        #expect(await pair.discovererLog.events.contains(where: Self.isMediumChange) == false)
        #expect(await pair.advertiser.connectedEndpoints() == ["DISC"])
        await pair.discoverer.shutdown()
        await pair.advertiser.shutdown()
    }

    @Test("After failed upgrades the advertiser offers again, later each time, and a later offer succeeds")
    func retriedUpgrade() async throws {
        let clock = ManualClock()
        let failures = LockedValue(0)
        // Keep-alive timers far away, so that the retry is the next deadline on the clock.
        let pair = EnginePair(
            keepAlive: KeepAliveSettings(interval: .seconds(100), timeout: .seconds(200)), clock: clock,
            upgradeBeforeConnecting: {
            let failed = failures.withLock { count -> Bool in
                count += 1
                return count <= 2
            }
            if failed { throw NearbyError(.endpointIoError, "not yet") }
        })
        _ = try await pair.connect()
        let attempts = try #require(pair.discovererUpgradeMedium).connectAttempts
        // Each failure arms the next offer: after 3 s (Timeouts.upgradeRetry), then after twice that.
        for (attempt, wait) in [(1, Duration.seconds(3)), (2, .seconds(6))] {
            _ = try await eventually("upgrade attempt \(attempt)") { attempts.withLock { $0 } == attempt ? true : nil }
            _ = try await eventually("the retry \(wait) later") {
                clock.nextDeadline == clock.now.advanced(by: wait) ? true : nil
            }
            clock.advance(by: wait)
        }
        _ = try await pair.advertiserLog.wait(Self.isMediumChange)
        _ = try await pair.discovererLog.wait(Self.isMediumChange)
        #expect(attempts.withLock { $0 } == 3)
        try await pair.advertiser.send(.bytes(Array("upgraded".utf8)), to: "DISC", id: 61)
        _ = try await pair.discovererLog.wait { if case .endpoint(.bytesReceived(_, 61, _)) = $0 { true } else { false } }
        // No shutdown: its goodbye lingers on the manual clock, which this test no longer moves.
    }

    @Test("A peer that never finishes draining the old channel is disconnected with a clear error")
    func stuckDrain() async throws {
        var timeouts = EndpointSession.Timeouts()
        timeouts.upgradeDrain = .milliseconds(500)
        let latch = Latch()
        let pair = EnginePair(timeouts: timeouts, upgradeBeforeConnecting: { await latch.wait() })
        _ = try await pair.connect()
        // The discoverer's frames on the first channel (its LAST_WRITE among them) never reach the advertiser, so
        // neither side gets a SAFE_TO_CLOSE. The first drain deadline ends the connection; the other side then
        // sees it close.
        pair.discovererMedium.freezeOpenedChannels()
        await latch.open()
        var errors: [NearbyError?] = []
        for log in [pair.advertiserLog, pair.discovererLog] {
            guard case .endpoint(.disconnected(_, let error)) = try await log.wait({
                if case .endpoint(.disconnected) = $0 { true } else { false }
            }) else { Issue.record("not the disconnected event"); return }
            errors.append(error)
        }
        #expect(errors.contains { $0?.code == .timeout && $0?.message.contains("bandwidth upgrade") == true })
        #expect(await pair.advertiserLog.events.contains(where: Self.isMediumChange) == false)
        await pair.discoverer.shutdown()
        await pair.advertiser.shutdown()
    }

    @Test("Strangers on the upgrade listener are dropped; the peer's own channel still completes the upgrade")
    func strangersOnTheUpgradeListener() async throws {
        let latch = Latch()
        let pair = EnginePair(upgradeBeforeConnecting: { await latch.wait() })
        _ = try await pair.connect()
        let listeners = try #require(pair.advertiserUpgradeMedium)
        _ = try await eventually("the upgrade listener") { listeners.openListeners == 1 ? true : nil }
        let onIncoming = try #require(listeners.air.upgradeListeners.withLock { $0.values.first })
        let intruders: [[UInt8]] = [
            Array("not a frame".utf8),
            OfflineFrames.serialize(OfflineFrames.clientIntroduction(endpointID: "EVIL")),
            OfflineFrames.serialize(OfflineFrames.keepAlive(ack: false, sequenceNumber: 1)),
        ]
        for bytes in intruders {
            let (ours, theirs) = InMemoryChannel.pair(medium: .wifiLAN)
            onIncoming(theirs)
            try await ours.writeFrame(bytes)
            // Dropped without an ack: the stream ends.
            #expect(try await ours.readFrame() == nil)
        }
        await latch.open()
        _ = try await pair.advertiserLog.wait(Self.isMediumChange)
        _ = try await pair.discovererLog.wait(Self.isMediumChange)
        try await pair.discoverer.send(.bytes(Array("fine".utf8)), to: "ADVR", id: 41)
        _ = try await pair.advertiserLog.wait { if case .endpoint(.bytesReceived(_, 41, _)) = $0 { true } else { false } }
        await pair.discoverer.shutdown()
        await pair.advertiser.shutdown()
    }

    @Test("Silent strangers on the upgrade listener do not hold back the peer's introduction")
    func silentStrangersDoNotDelayThePeer() async throws {
        // Each stranger may stay silent far longer than the whole offer lasts: read one after the other, the first
        // stranger alone would outlast the offer and the upgrade could not happen within the bound below.
        var timeouts = EndpointSession.Timeouts()
        timeouts.clientIntroduction = .seconds(300)
        timeouts.upgradeChannel = .seconds(60)
        let latch = Latch()
        let pair = EnginePair(timeouts: timeouts, upgradeBeforeConnecting: { await latch.wait() })
        _ = try await pair.connect()
        let listeners = try #require(pair.advertiserUpgradeMedium)
        _ = try await eventually("the upgrade listener") { listeners.openListeners == 1 ? true : nil }
        let onIncoming = try #require(listeners.air.upgradeListeners.withLock { $0.values.first })
        var strangers: [InMemoryChannel] = []
        for _ in 0..<5 {
            let (ours, theirs) = InMemoryChannel.pair(medium: .wifiLAN)
            onIncoming(theirs)
            strangers.append(ours)
        }
        await latch.open()
        _ = try await pair.advertiserLog.wait(timeout: .seconds(30), Self.isMediumChange)
        _ = try await pair.discovererLog.wait(timeout: .seconds(30), Self.isMediumChange)
        // The strangers were closed once the peer's channel was taken, long before their deadline.
        for stranger in strangers {
            let read = try await withTestTimeout(30, "a stranger's channel to close") { try await stranger.readFrame() }
            #expect(read == nil)
        }
        try await pair.discoverer.send(.bytes(Array("fine".utf8)), to: "ADVR", id: 42)
        _ = try await pair.advertiserLog.wait { if case .endpoint(.bytesReceived(_, 42, _)) = $0 { true } else { false } }
        await pair.discoverer.shutdown()
        await pair.advertiser.shutdown()
    }

    @Test("Introductions are read on at most 8 channels at once; a further channel is closed at once")
    func tooManyStrangersAreClosedAtOnce() async throws {
        var timeouts = EndpointSession.Timeouts()
        timeouts.clientIntroduction = .seconds(300)
        timeouts.upgradeChannel = .seconds(60)
        timeouts.upgradeRetry = .milliseconds(100)
        let latch = Latch()
        let pair = EnginePair(timeouts: timeouts, upgradeBeforeConnecting: { await latch.wait() })
        _ = try await pair.connect()
        let listeners = try #require(pair.advertiserUpgradeMedium)
        _ = try await eventually("the upgrade listener") { listeners.openListeners == 1 ? true : nil }
        let onIncoming = try #require(listeners.air.upgradeListeners.withLock { $0.values.first })
        var strangers: [InMemoryChannel] = []
        for _ in 0..<8 {
            let (ours, theirs) = InMemoryChannel.pair(medium: .wifiLAN)
            onIncoming(theirs)
            strangers.append(ours)
        }
        let (ninth, theirs) = InMemoryChannel.pair(medium: .wifiLAN)
        onIncoming(theirs)
        let read = try await withTestTimeout(30, "the ninth stranger's channel to close") { try await ninth.readFrame() }
        #expect(read == nil)
        // The strangers leave; the peer's channel (or its retry) gets through.
        for stranger in strangers { await stranger.close() }
        await latch.open()
        _ = try await pair.advertiserLog.wait(timeout: .seconds(30), Self.isMediumChange)
        _ = try await pair.discovererLog.wait(timeout: .seconds(30), Self.isMediumChange)
        await pair.discoverer.shutdown()
        await pair.advertiser.shutdown()
    }

    @Test("An offer nobody takes in time is withdrawn and the connection stays")
    func unansweredOffer() async throws {
        var timeouts = EndpointSession.Timeouts()
        timeouts.upgradeChannel = .milliseconds(300)
        // No second offer during the test, however slow the machine: the connection must stay where it is.
        timeouts.upgradeRetry = .seconds(3600)
        timeouts.upgradeRetryMax = .seconds(3600)
        let latch = Latch()
        let pair = EnginePair(timeouts: timeouts, upgradeBeforeConnecting: { await latch.wait() })
        _ = try await pair.connect()
        let listeners = try #require(pair.advertiserUpgradeMedium)
        _ = try await eventually("the upgrade listener") { listeners.openListeners == 1 ? true : nil }
        _ = try await eventually("the listener to stop") { listeners.openListeners == 0 ? true : nil }
        // The responder's late channel finds nothing listening: it answers UPGRADE_FAILURE, both stay.
        await latch.open()
        try await pair.advertiser.send(.bytes(Array("still".utf8)), to: "DISC", id: 51)
        _ = try await pair.discovererLog.wait { if case .endpoint(.bytesReceived(_, 51, _)) = $0 { true } else { false } }
        #expect(await pair.discoverer.connectedEndpoints() == ["ADVR"])
        // The connection never moved: each side's events, up to the end of the connection, hold no medium change.
        await pair.discoverer.disconnect(from: "ADVR")
        for log in [pair.advertiserLog, pair.discovererLog] {
            _ = try await log.wait { if case .endpoint(.disconnected) = $0 { true } else { false } }
            #expect(await log.events.contains(where: Self.isMediumChange) == false)
        }
        await pair.discoverer.shutdown()
        await pair.advertiser.shutdown()
    }

    @Sendable static func isMediumChange(_ event: EngineEvent) -> Bool {
        if case .endpoint(.mediumChanged) = event { return true }
        return false
    }

    /// Reads stream `id` as it arrives and checks every byte against the pattern; returns the byte count.
    static func verify(stream id: PayloadID, from log: EventLog, seed: UInt8) async throws -> Task<Int, any Error> {
        guard case .endpoint(.streamReceived(_, _, let stream)) = try await log.wait({
            if case .endpoint(.streamReceived(_, id, _)) = $0 { true } else { false }
        }) else { throw NearbyError(.unknown, "unreachable") }
        return Task {
            var count = 0
            for try await chunk in stream {
                for byte in chunk {
                    guard byte == PatternFeed.byte(at: count, seed: seed) else {
                        throw NearbyError(.invalidFrame, "stream \(id): wrong byte at offset \(count)")
                    }
                    count += 1
                }
            }
            return count
        }
    }
}

/// A stream source that produces a byte pattern in 700-byte chunks, a little at a time, until told to finish.
actor PatternFeed {
    private let seed: UInt8
    private(set) var produced = 0
    private var limit: Int?

    init(seed: UInt8) { self.seed = seed }

    static func byte(at offset: Int, seed: UInt8) -> UInt8 {
        UInt8(truncatingIfNeeded: offset &* 31 &+ offset / 251 &+ Int(seed))
    }

    /// Ends the stream once `extra` more bytes went out.
    func finish(after extra: Int) { limit = produced + extra }

    func next() async -> [UInt8]? {
        if let limit, produced >= limit { return nil }
        try? await Task.sleep(for: .milliseconds(1))
        let count = min(700, (limit ?? .max) - produced)
        let chunk = (0..<count).map { Self.byte(at: produced + $0, seed: seed) }
        produced += count
        return chunk
    }
}

/// Holds callers until opened.
actor Latch {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
