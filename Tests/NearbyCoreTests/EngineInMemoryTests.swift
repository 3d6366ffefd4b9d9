import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// The engine end to end over the in-memory medium (the real mediums have their own tests).
struct EngineInMemoryTests {
    @Test("Discovery, request and acceptance connect both sides with equal codes", .timeLimit(.minutes(5)))
    func connects() async throws {
        let pair = EnginePair()
        let (advertiserInfo, discovererInfo) = try await pair.connect()
        #expect(advertiserInfo.verificationDigits == discovererInfo.verificationDigits)
        #expect(advertiserInfo.endpointID == "DISC" && advertiserInfo.endpointInfo == Array("discoverer".utf8))
        #expect(discovererInfo.endpointID == "ADVR" && discovererInfo.endpointInfo == Array("advertiser".utf8))
        #expect(await pair.advertiser.connectedEndpoints() == ["DISC"])
        #expect(await pair.discoverer.connectedEndpoints() == ["ADVR"])
    }

    @Test("Bytes, a file and a stream arrive intact with monotonic updates ending in success", .timeLimit(.minutes(5)))
    func payloads() async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        var generator = SeededGenerator(seed: 99)
        let message = generator.bytes(1000)
        try await pair.discoverer.send(.bytes(message), to: "ADVR", id: 11)
        guard case .endpoint(.bytesReceived(_, 11, let received)) = try await pair.advertiserLog.wait({
            if case .endpoint(.bytesReceived(_, 11, _)) = $0 { true } else { false }
        }) else { Issue.record("not the bytes event"); return }
        #expect(received == message)

        let source = pair.receiveDirectory.appendingPathComponent("source.bin")
        let content = Data(generator.bytes(300_000))
        try content.write(to: source)
        try await pair.discoverer.send(.file(source, name: "copy.bin", parentFolder: ""), to: "ADVR", id: 12)
        guard case .endpoint(.fileReceived(_, 12, let url, _)) = try await pair.advertiserLog.wait({
            if case .endpoint(.fileReceived(_, 12, _, _)) = $0 { true } else { false }
        }) else { Issue.record("not the file event"); return }
        #expect(try Data(contentsOf: url) == content)
        #expect(url.lastPathComponent == "copy.bin")
        let updates = await pair.advertiserLog.updates(12, outgoing: false)
        #expect(updates.last?.status == .success)
        #expect(zip(updates, updates.dropFirst()).allSatisfy { $0.bytesTransferred <= $1.bytesTransferred })
        #expect(updates.dropLast().allSatisfy { $0.status == .inProgress })

        let chunks = [generator.bytes(70_000), generator.bytes(10), generator.bytes(200_000)]
        let feed = ChunkFeed(chunks)
        try await pair.advertiser.send(.stream(next: { await feed.next() }), to: "DISC", id: 13)
        guard case .endpoint(.streamReceived(_, 13, let stream)) = try await pair.discovererLog.wait({
            if case .endpoint(.streamReceived(_, 13, _)) = $0 { true } else { false }
        }) else { Issue.record("not the stream event"); return }
        var streamed: [UInt8] = []
        for try await chunk in stream { streamed += chunk }
        #expect(streamed == chunks.flatMap { $0 })
        _ = try await pair.advertiserLog.wait {
            if case .endpoint(.transferUpdate(_, let u, true)) = $0 { u.payloadID == 13 && u.status == .success } else { false }
        }
    }

    @Test("Bytes payloads over the limit are refused with a clear error", .timeLimit(.minutes(5)))
    func bytesLimit() async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        let error = await #expect(throws: NearbyError.self) {
            try await pair.discoverer.send(.bytes([UInt8](repeating: 0, count: PayloadLimits.maxBytesPayloadSize + 1)), to: "ADVR")
        }
        #expect(error?.code == .invalidArgument)
    }

    @Test("A rejection reaches both sides", .timeLimit(.minutes(5)))
    func rejection() async throws {
        let pair = EnginePair()
        try await pair.advertiser.startAdvertising(endpointInfo: [1])
        try await pair.discoverer.startDiscovery()
        _ = try await pair.discovererLog.wait { if case .endpointFound = $0 { true } else { false } }
        try await pair.discoverer.requestConnection(to: "ADVR", endpointInfo: [2])
        _ = try await pair.advertiserLog.wait { if case .endpoint(.initiated) = $0 { true } else { false } }
        try await pair.advertiser.rejectConnection("DISC")
        try await pair.discoverer.acceptConnection("ADVR")
        _ = try await pair.discovererLog.wait { if case .endpoint(.rejected(_, true)) = $0 { true } else { false } }
        _ = try await pair.advertiserLog.wait { if case .endpoint(.rejected(_, false)) = $0 { true } else { false } }
    }

    @Test("Cancelling a file mid-transfer from either side is seen as canceled by both", .timeLimit(.minutes(5)), arguments: [true, false])
    func cancel(bySender: Bool) async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        let source = pair.receiveDirectory.appendingPathComponent("big.bin")
        try Data(count: 20_000_000).write(to: source)
        try await pair.discoverer.send(.file(source, name: "big-copy.bin", parentFolder: ""), to: "ADVR", id: 21)
        _ = try await pair.advertiserLog.wait {
            // FILE progress comes at most every 50 ms, but the first update always arrives: the file is under way.
            if case .endpoint(.transferUpdate(_, let u, false)) = $0 { u.payloadID == 21 && u.status == .inProgress } else { false }
        }
        #expect(await (bySender ? pair.discoverer : pair.advertiser).cancelPayload(21))
        for (log, outgoing) in [(pair.discovererLog, true), (pair.advertiserLog, false)] {
            let event = try await log.wait {
                if case .endpoint(.transferUpdate(_, let u, outgoing)) = $0 { u.payloadID == 21 && isFinal(u.status) } else { false }
            }
            guard case .endpoint(.transferUpdate(_, let update, _)) = event else { Issue.record("\(event)"); return }
            #expect(update.status == .canceled)
        }
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: pair.receiveDirectory.path)
        #expect(!leftovers.contains("big-copy.bin"))
        #expect(!leftovers.contains { $0.hasSuffix(".partial") })
    }

    @Test("A peer that goes silent is disconnected after the keep-alive timeout", .timeLimit(.minutes(5)))
    func keepAliveTimeout() async throws {
        let clock = ManualClock()
        let pair = EnginePair(keepAlive: KeepAliveSettings(interval: .milliseconds(500), timeout: .seconds(4)), clock: clock)
        _ = try await pair.connect()
        pair.discovererMedium.freezeOpenedChannels()
        // Each side sleeps on its keep-alive send, keep-alive timeout and write deadline timers.
        await clock.waitForSleepers(atLeast: 6)
        clock.advance(by: .seconds(4))
        let event = try await pair.advertiserLog.wait {
            if case .endpoint(.disconnected) = $0 { true } else { false }
        }
        guard case .endpoint(.disconnected(_, let error)) = event else { Issue.record("\(event)"); return }
        #expect(error?.code == .timeout)
    }

    @Test("A clean disconnect is reported on both sides without an error", .timeLimit(.minutes(5)))
    func disconnect() async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        await pair.discoverer.disconnect(from: "ADVR")
        guard case .endpoint(.disconnected(_, let error)) = try await pair.advertiserLog.wait({
            if case .endpoint(.disconnected) = $0 { true } else { false }
        }) else { Issue.record("not the disconnected event"); return }
        #expect(error == nil)
    }

    @Test("Point-to-point refuses a second outgoing connection", .timeLimit(.minutes(5)))
    func pointToPoint() async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        await #expect(throws: NearbyError.self) {
            try await pair.discoverer.requestConnection(
                route: .tcp(hosts: ["memory"], port: 1), medium: .wifiLAN, endpointInfo: [1])
        }
    }

    @Test("Losing an advertisement is reported", .timeLimit(.minutes(5)))
    func lost() async throws {
        let pair = EnginePair()
        try await pair.advertiser.startAdvertising(endpointInfo: [1])
        try await pair.discoverer.startDiscovery()
        _ = try await pair.discovererLog.wait { if case .endpointFound = $0 { true } else { false } }
        await pair.advertiser.stopAdvertising()
        _ = try await pair.discovererLog.wait { if case .endpointLost(endpointID: "ADVR") = $0 { true } else { false } }
    }

    @Test("Endpoint info over 131 bytes is refused", .timeLimit(.minutes(5)))
    func endpointInfoLimit() async throws {
        let pair = EnginePair()
        await #expect(throws: NearbyError.self) {
            try await pair.advertiser.startAdvertising(endpointInfo: [UInt8](repeating: 1, count: 132))
        }
    }
}

actor ChunkFeed {
    private var chunks: [[UInt8]]
    init(_ chunks: [[UInt8]]) { self.chunks = chunks }
    func next() -> [UInt8]? { chunks.isEmpty ? nil : chunks.removeFirst() }
}
