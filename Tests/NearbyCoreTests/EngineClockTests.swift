import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// The engine's deadlines on a ``ManualClock``: the test waits for the session's timers to sleep, moves the clock,
/// and checks the outcome; nothing waits for real time.
struct EngineClockTests {
    @Test("A socket that sends no connection request is closed after Timeouts.connectionRequest", .timeLimit(.minutes(5)))
    func silentSocketIsClosed() async throws {
        let clock = ManualClock()
        let pair = EnginePair(clock: clock)
        let advertising = try await pair.advertiser.startAdvertising(endpointInfo: [1])
        let port = try #require(advertising.first?.port)
        let channel = try await pair.discovererMedium.connect(to: .tcp(hosts: ["memory"], port: port))
        // The advertiser's session sleeps on the request deadline and on its write deadline.
        await clock.waitForSleepers(atLeast: 2)
        #expect(clock.nextDeadline == clock.now.advanced(by: .seconds(2)), "Wi-Fi LAN: the protocol's 2 s")
        clock.advance(by: EndpointSession.Timeouts().connectionRequest)
        let read = try await withTestTimeout(30, "the silent socket to close") { try await channel.readFrame() }
        #expect(read == nil)
    }

    @Test("A silent BLE channel gets Timeouts.connectionRequestOverBLE (10 s) for its request, not 2 s", .timeLimit(.minutes(5)))
    func silentBLEChannelGetsTheLongerDeadline() async throws {
        let timeouts = EndpointSession.Timeouts()
        #expect(timeouts.connectionRequest(on: .wifiLAN) == .seconds(2))
        #expect(timeouts.connectionRequest(on: .ble) == .seconds(10))
        let clock = ManualClock()
        // Both engines connect over an in-memory medium of kind .ble.
        let pair = EnginePair(clock: clock, upgradeBeforeConnecting: {})
        let advertising = try await pair.advertiser.startAdvertising(endpointInfo: [1], only: [.ble])
        let port = try #require(advertising.first?.port)
        let channel = try await pair.discovererMedium.connect(to: .tcp(hosts: ["memory"], port: port))
        #expect(channel.medium == .ble)
        await clock.waitForSleepers(atLeast: 2)
        #expect(clock.nextDeadline == clock.now.advanced(by: .seconds(10)))
        clock.advance(by: .seconds(2))
        // Still waiting: the only sleepers left are the session's (the request deadline, 8 s away now).
        #expect(clock.nextDeadline == clock.now.advanced(by: .seconds(8)))
        clock.advance(by: .seconds(8))
        let read = try await withTestTimeout(30, "the silent channel to close") { try await channel.readFrame() }
        #expect(read == nil)
        for session in advertising { await session.stop() }
    }

    @Test("An advertiser that never answers our request fails the connection after Timeouts.handshake", .timeLimit(.minutes(5)))
    func handshakeTimeout() async throws {
        let clock = ManualClock()
        let pair = EnginePair(clock: clock)
        let mute = InMemoryMedium(air: pair.discovererMedium.air, kind: pair.discovererMedium.kind)
        let (arrivals, arrived) = AsyncStream<any EndpointChannel>.makeStream()
        let advertising = try await mute.startAdvertising(
            AdvertisingRequest(
                serviceID: "com.example.test", endpointID: "MUTE", endpointInfo: [1], pcp: Strategy.pointToPoint.pcp)
        ) { arrived.yield($0) }
        let port = try #require(advertising.port)
        _ = try await pair.discoverer.requestConnection(
            route: .tcp(hosts: ["memory"], port: port), medium: pair.discovererMedium.kind, peerEndpointID: "MUTE",
            endpointInfo: [2])
        var iterator = arrivals.makeAsyncIterator()
        let channel = await iterator.next()
        #expect(channel != nil)
        // The discoverer's session sleeps on the handshake deadline and on its write deadline.
        await clock.waitForSleepers(atLeast: 2)
        clock.advance(by: EndpointSession.Timeouts().handshake)
        let event = try await pair.discovererLog.wait { if case .endpoint(.connectionFailed) = $0 { true } else { false } }
        guard case .endpoint(.connectionFailed(_, let error)) = event else { Issue.record("\(event)"); return }
        #expect(error.code == .timeout)
        #expect(error.message.contains("handshake"), "\(error)")
        await advertising.stop()
    }
}
