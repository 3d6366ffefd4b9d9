import Foundation
import Logging
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// Fairness of outgoing payloads: a large payload never holds back a second payload to the same endpoint, and a
/// stuck endpoint never holds back another endpoint. No timings: a payload that would starve simply never finishes,
/// and `eventually` gives up.
struct PayloadFairnessTests {
    @Test("A second stream to the same endpoint completes while the first one is still open", .timeLimit(.minutes(5)))
    func secondStreamOvertakesAnOpenOne() async throws {
        let harness = SenderHarness()
        let valve = SendGate()
        valve.close()
        let served = LockedValue(false)
        // The first stream sends one chunk, then waits at the valve until the test opens it.
        try harness.sender.send(
            .stream(next: {
                if !served.withLock({ old in defer { old = true }; return old }) { return [UInt8](repeating: 1, count: 1500) }
                await valve.wait()
                return nil
            }), id: 1)
        let chunks = LockedValue([[UInt8](repeating: 2, count: 900), [UInt8](repeating: 3, count: 900)])
        try harness.sender.send(
            .stream(next: { chunks.withLock { $0.isEmpty ? nil : $0.removeFirst() } }), id: 2)
        try await harness.waitForSuccess(of: 2, "the second stream to finish while the first is open")
        #expect(!harness.succeeded.contains(1))
        valve.open()
        try await harness.waitForSuccess(of: 1, "the first stream to finish once its source ends")
        await harness.end()
    }

    @Test("A small file sent while a large one streams finishes first, and its chunks interleave with the large one's", .timeLimit(.minutes(5)))
    func smallFileOvertakesALargeOne() async throws {
        let harness = SenderHarness()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("fairness-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let large = directory.appendingPathComponent("large.bin")
        let small = directory.appendingPathComponent("small.bin")
        try Data(repeating: 7, count: 200_000).write(to: large)  // 200 chunks of 1000 bytes
        try Data(repeating: 8, count: 2_000).write(to: small)  // 2 chunks
        // Both payloads are queued before either may write.
        harness.gate.close()
        try harness.sender.send(.file(large, name: "large.bin", parentFolder: ""), id: 10)
        try harness.sender.send(.file(small, name: "small.bin", parentFolder: ""), id: 11)
        try harness.sender.send(.bytes([1, 2, 3]), id: 12)
        // All three senders hold their first frame at the gate before it opens, so none starts late because the
        // scheduler had not run its task yet (CI once saw the large file finish before the small one had begun).
        _ = try await eventually("all three payloads waiting at the gate") { harness.gate.waiterCount == 3 ? true : nil }
        harness.gate.open()
        try await harness.waitForSuccess(of: 10, "the large file to finish")
        let order = harness.succeeded
        let largeDone = try #require(order.firstIndex(of: 10))
        #expect(try #require(order.firstIndex(of: 11), "\(order)") < largeDone, "\(order)")
        #expect(try #require(order.firstIndex(of: 12), "\(order)") < largeDone, "\(order)")

        // On the wire, the small file's last frame comes before the large file's last frame.
        var lastFrames: [Int64] = []
        while lastFrames.count < 3 {
            let body = try #require(try await harness.peer.readFrame())
            let frame = try OfflineFrameParser.parse(body)
            if case .payloadTransfer(let transfer) = frame, transfer.payloadChunk.flags & 1 == 1 {
                lastFrames.append(transfer.payloadHeader.id)
            }
        }
        #expect(lastFrames.last == 10, "\(lastFrames)")
        await harness.end()
    }

    @Test("BYTES payloads to one endpoint still finish in the order they were sent", .timeLimit(.minutes(5)))
    func bytesKeepTheirOrder() async throws {
        let harness = SenderHarness()
        harness.gate.close()
        for id in PayloadID(20)..<30 { try harness.sender.send(.bytes([UInt8(id)]), id: id) }
        harness.gate.open()
        try await harness.waitForSuccess(of: 29, "the last bytes payload")
        #expect(harness.succeeded == Array(PayloadID(20)..<30))
        await harness.end()
    }

    @Test("An endpoint whose writes are stuck does not hold back another endpoint", .timeLimit(.minutes(5)))
    func stuckEndpointDoesNotStarveAnother() async throws {
        let stuck = SenderHarness()
        let healthy = SenderHarness()
        stuck.ours.stallsWrites.withLock { $0 = true }
        try stuck.sender.send(.bytes([UInt8](repeating: 1, count: 5000)), id: 40)
        _ = try await eventually("the stuck endpoint's write to hang") { stuck.ours.stalledWrites.withLock { $0 } > 0 ? true : nil }
        try healthy.sender.send(.bytes([9, 9]), id: 41)
        try await healthy.waitForSuccess(of: 41, "the healthy endpoint's payload")
        #expect(stuck.succeeded.isEmpty)
        await stuck.end()
        await healthy.end()
    }

    @Test("Thirty files started at once all arrive intact at a peer that allows only nine open payloads", .timeLimit(.minutes(5)))
    func manyFilesStayUnderThePeersOpenPayloadLimit() async throws {
        var limits = ResourceLimits()
        limits.maxConcurrentIncomingPayloads = OutgoingPayloadSender.maxInterleavedPayloads + 1
        let pair = EnginePair(limits: limits)
        _ = try await pair.connect()
        var contents: [PayloadID: Data] = [:]
        for index in 0..<30 {
            let id = PayloadID(100 + index)
            let content = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* (index + 1)) })  // 4 chunks
            let url = pair.receiveDirectory.appendingPathComponent("source-\(index).bin")
            try content.write(to: url)
            contents[id] = content
            try await pair.discoverer.send(.file(url, name: "copy-\(index).bin", parentFolder: ""), to: "ADVR", id: id)
        }
        for (id, content) in contents {
            let event = try await pair.advertiserLog.wait(timeout: .seconds(60)) {
                if case .endpoint(.fileReceived(_, id, _, _)) = $0 { true } else { false }
            }
            let url = try #require(Self.fileURL(event))
            #expect(try Data(contentsOf: url) == content)
        }
        let dropped = await pair.advertiserLog.events.contains { if case .endpoint(.disconnected) = $0 { true } else { false } }
        #expect(!dropped)
    }

    private static func fileURL(_ event: EngineEvent) -> URL? {
        if case .endpoint(.fileReceived(_, _, let url, _)) = event { return url }
        return nil
    }
}
