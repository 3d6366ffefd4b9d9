import Foundation
import NearbyCore
import NearbySecurity
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// Safe-to-disconnect, payload acknowledgements, auto-reconnect and auto-resume between two engines over the
/// in-memory medium (docs/LINK-SAFETY.md); the same with real processes over TCP is in the integration tests.
@Suite("Link safety between two engines", .timeLimit(.minutes(2)))
struct EngineLinkSafetyTests {
    static func isEvent(_ wanted: @escaping @Sendable (EndpointEvent) -> Bool) -> @Sendable (EngineEvent) -> Bool {
        { if case .endpoint(let event) = $0 { wanted(event) } else { false } }
    }

    static func outcome(_ id: PayloadID, outgoing: Bool) -> @Sendable (EngineEvent) -> Bool {
        isEvent {
            if case .transferUpdate(_, let update, let isOutgoing) = $0 {
                update.payloadID == id && isOutgoing == outgoing && update.status != .inProgress
            } else { false }
        }
    }

    static func file(_ pair: EnginePair, _ name: String, size: Int, seed: UInt64) throws -> (URL, Data) {
        var generator = SeededGenerator(seed: seed)
        let content = Data(generator.bytes(size))
        let url = pair.receiveDirectory.appendingPathComponent(name)
        try content.write(to: url)
        return (url, content)
    }

    @Test("A file counts as sent only once the receiver has it in place (PAYLOAD_ACK between swift-nearby peers)")
    func successAfterAcknowledgement() async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        let (source, content) = try Self.file(pair, "acked-source.bin", size: 200_000, seed: 5)
        try await pair.discoverer.send(.file(source, name: "acked.bin", parentFolder: ""), to: "ADVR", id: 31)
        guard case .endpoint(.transferUpdate(_, let update, _)) = try await pair.discovererLog.wait(Self.outcome(31, outgoing: true))
        else { return }
        #expect(update.status == .success)
        // The receiver linked the file before it acknowledged it.
        let placed = pair.receiveDirectory.appendingPathComponent("acked.bin")
        #expect(try Data(contentsOf: placed) == content)
    }

    @Test("A disconnect right after the last payload returns once the peer confirmed; nothing is lost")
    func safeDisconnect() async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        try await pair.discoverer.send(.bytes(Array("last words".utf8)), to: "ADVR", id: 32)
        _ = try await pair.discovererLog.wait(Self.outcome(32, outgoing: true))
        await pair.discoverer.disconnect(from: "ADVR")
        // By the time disconnect returned, the peer had read everything and confirmed.
        let received = await pair.advertiserLog.events.contains(where: Self.isEvent {
            if case .bytesReceived(_, 32, let bytes) = $0 { bytes == Array("last words".utf8) } else { false }
        })
        #expect(received)
        guard case .endpoint(.disconnected(_, let error)) = try await pair.advertiserLog.wait(Self.isEvent {
            if case .disconnected = $0 { true } else { false }
        }) else { return }
        #expect(error == nil)
        guard case .endpoint(.disconnected(_, let ownError)) = try await pair.discovererLog.wait(Self.isEvent {
            if case .disconnected = $0 { true } else { false }
        }) else { return }
        #expect(ownError == nil)
    }

    @Test("A link cut mid-file: both sides reconnect, the file resumes and arrives whole")
    func reconnectAndResume() async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        let (source, content) = try Self.file(pair, "resume-source.bin", size: 3_000_000, seed: 6)
        try await pair.discoverer.send(.file(source, name: "resumed.bin", parentFolder: ""), to: "ADVR", id: 33)
        _ = try await pair.advertiserLog.wait(Self.isEvent {
            if case .transferUpdate(_, let update, false) = $0 { update.payloadID == 33 && update.bytesTransferred > 500_000 } else { false }
        })
        await pair.discovererMedium.cutOpenedChannels()
        _ = try await pair.discovererLog.wait(Self.isEvent { if case .reconnecting = $0 { true } else { false } })
        _ = try await pair.advertiserLog.wait(Self.isEvent { if case .reconnected = $0 { true } else { false } })
        _ = try await pair.discovererLog.wait(Self.isEvent { if case .reconnected = $0 { true } else { false } })
        guard case .endpoint(.fileReceived(_, 33, let url, _)) = try await pair.advertiserLog.wait(Self.isEvent {
            if case .fileReceived(_, 33, _, _) = $0 { true } else { false }
        }) else { return }
        #expect(try Data(contentsOf: url) == content)
        guard case .endpoint(.transferUpdate(_, let update, _)) = try await pair.discovererLog.wait(Self.outcome(33, outgoing: true))
        else { return }
        #expect(update.status == .success)
        #expect(await pair.discoverer.connectedEndpoints() == ["ADVR"])
        #expect(await pair.advertiser.connectedEndpoints() == ["DISC"])
        let disconnected = await pair.advertiserLog.events.contains(where: Self.isEvent {
            if case .disconnected = $0 { true } else { false }
        })
        #expect(!disconnected)
    }

    @Test("BYTES in flight at a cut are sent again whole and arrive once")
    func bytesResentWhole() async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        let message = Array(repeating: UInt8(7), count: 500_000)
        try await pair.discoverer.send(.bytes(message), to: "ADVR", id: 34)
        await pair.discovererMedium.cutOpenedChannels()
        guard case .endpoint(.bytesReceived(_, 34, let received)) = try await pair.advertiserLog.wait(Self.isEvent {
            if case .bytesReceived(_, 34, _) = $0 { true } else { false }
        }) else { return }
        #expect(received == message)
        guard case .endpoint(.transferUpdate(_, let update, _)) = try await pair.discovererLog.wait(Self.outcome(34, outgoing: true))
        else { return }
        #expect(update.status == .success)
        let copies = await pair.advertiserLog.events.filter(Self.isEvent {
            if case .bytesReceived(_, 34, _) = $0 { true } else { false }
        }).count
        #expect(copies == 1)
    }

    @Test("When the peer never comes back, the window ends the connection and the payloads in flight fail")
    func windowPasses() async throws {
        var timeouts = EndpointSession.Timeouts()
        timeouts.autoReconnectWindow = .milliseconds(500)
        let pair = EnginePair(timeouts: timeouts)
        _ = try await pair.connect()
        // A stream that sends ten chunks and then waits (the in-memory channel has no back-pressure: a file would be
        // in the receiver's buffer whole before the cut).
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let sent = LockedValue(0)
        try await pair.discoverer.send(.stream(next: {
            if sent.withLock({ $0 }) >= 10 {
                for await _ in release {}
                return nil
            }
            sent.withLock { $0 += 1 }
            return [UInt8](repeating: 9, count: 65_536)
        }), to: "ADVR", id: 35)
        guard case .endpoint(.streamReceived(_, 35, let stream)) = try await pair.advertiserLog.wait(Self.isEvent {
            if case .streamReceived(_, 35, _) = $0 { true } else { false }
        }) else { return }
        let reading = Task { () -> (Int, (any Error)?) in
            var count = 0
            do {
                for try await chunk in stream { count += chunk.count }
                return (count, nil)
            } catch {
                return (count, error)
            }
        }
        _ = try await pair.advertiserLog.wait(Self.isEvent {
            if case .transferUpdate(_, let update, false) = $0 { update.payloadID == 35 && update.bytesTransferred >= 655_360 } else { false }
        })
        await pair.advertiser.stopAdvertising()
        await pair.discovererMedium.cutOpenedChannels()
        _ = try await pair.discovererLog.wait(Self.isEvent { if case .reconnecting = $0 { true } else { false } })
        for log in [pair.discovererLog, pair.advertiserLog] {
            guard case .endpoint(.disconnected(_, let error)) = try await log.wait(Self.isEvent {
                if case .disconnected = $0 { true } else { false }
            }) else { return }
            #expect(error?.code == .timeout, "\(String(describing: error))")
        }
        // The stream's source gives its end now; the sender finds the connection gone.
        releaser.finish()
        guard case .endpoint(.transferUpdate(_, let update, _)) = try await pair.discovererLog.wait(Self.outcome(35, outgoing: true))
        else { return }
        #expect(update.status == .failure)
        let (count, error) = await reading.value
        #expect(count == 655_360 && error != nil)
    }

    @Test("A stranger who knows the endpoint ID cannot take the endpoint over")
    func impostorRefused() async throws {
        let air = InMemoryMedium.Air()
        let pair = EnginePair(air: air)
        _ = try await pair.connect()
        let stranger = InMemoryMedium(air: air)
        let route = try #require(await pair.discoverer.discoveredEndpoints.first { $0.endpointID == "ADVR" }?.route)
        let channel = try await stranger.connect(to: route)
        try await channel.writeFrame(OfflineFrames.serialize(OfflineFrames.autoReconnect(
            .clientIntroduction, endpointID: "DISC", lastEndpointID: "ADVR")))
        let ack = try ReconnectFrames.parse(try #require(try await channel.readFrame()))
        #expect(ack.eventType == .clientIntroductionAck)
        var client = Ukey2Client()
        try await channel.writeFrame(try client.start())
        guard case .sendAndComplete(let finished, let result) = client.receive(try #require(try await channel.readFrame()))
        else { Issue.record("UKEY2 did not complete"); return }
        try await channel.writeFrame(finished)
        var context = result.makeSecureChannel()
        let forged = PeerExtension.reconnectProof(
            key: CryptoPrimitives.randomBytes(32), role: .client, newAuthString: result.authString)
        try await channel.writeFrame(try context.encode(OfflineFrames.serialize(OfflineFrames.autoReconnect(
            .clientIntroduction, endpointID: "DISC", sessionProof: forged))))
        // Refused: the channel closes without an answer.
        #expect(try await channel.readFrame() == nil)
        // The endpoint was not touched: still connected, still carrying payloads, never reconnecting.
        try await pair.discoverer.send(.bytes(Array("still here".utf8)), to: "ADVR", id: 36)
        _ = try await pair.advertiserLog.wait(Self.isEvent {
            if case .bytesReceived(_, 36, _) = $0 { true } else { false }
        })
        let reconnecting = await pair.advertiserLog.events.contains(where: Self.isEvent {
            if case .reconnecting = $0 { true } else { false }
        })
        #expect(!reconnecting)
        #expect(await pair.advertiser.connectedEndpoints() == ["DISC"])
    }

    @Test("With auto-reconnect off on one side, a cut ends the connection as before")
    func reconnectOff() async throws {
        var off = EndpointSession.Timeouts()
        off.autoReconnectWindow = .zero
        let pair = EnginePair(timeouts: off)
        _ = try await pair.connect()
        await pair.discovererMedium.cutOpenedChannels()
        _ = try await pair.discovererLog.wait(Self.isEvent { if case .disconnected = $0 { true } else { false } })
        let reconnecting = await pair.discovererLog.events.contains(where: Self.isEvent {
            if case .reconnecting = $0 { true } else { false }
        })
        #expect(!reconnecting)
    }
}

/// Reads AUTO_RECONNECT frames for the tests.
enum ReconnectFrames {
    static func parse(_ body: [UInt8]) throws -> ProtoAutoReconnectFrame {
        guard case .other(.autoReconnect, let v1) = try OfflineFrameParser.parse(body) else {
            throw NearbyError(.invalidFrame, "not an AUTO_RECONNECT frame")
        }
        return v1.autoReconnect
    }
}
