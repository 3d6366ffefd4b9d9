import Foundation
import Logging
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

/// Receive limits end to end between two engines: the payload fails on both sides, the partial file is deleted,
/// and the connection stays up.
struct EnginePayloadLimitsTests {
    enum Case: String, CaseIterable, Sendable {
        /// A 1 GiB file against a 100 kB budget: refused at its header.
        case fileOverBudget
        /// A 1 GiB file against a free-space floor no disk has.
        case fileOverFreeSpaceFloor
        /// A stream of unknown size that keeps coming, against a 100 kB budget: failed when it crosses it.
        case streamOverBudget
        /// A 1 kB file against a 500-byte budget: all of its frames are sent before the receiver's PAYLOAD_ERROR
        /// arrives, so the sender already waits for the acknowledgement (between swift-nearby peers) when it is
        /// told; it must fail then, not wait for ever (a CLI sender once did).
        case smallFileSentWholeOverBudget

        var limits: ResourceLimits {
            var limits = ResourceLimits()
            switch self {
            case .fileOverBudget, .streamOverBudget: limits.maxReceivedBytesPerConnection = 100_000
            case .smallFileSentWholeOverBudget: limits.maxReceivedBytesPerConnection = 500
            case .fileOverFreeSpaceFloor: limits.minimumFreeDiskSpace = Int64.max / 2
            }
            return limits
        }
    }

    /// A stream source of 10 kB chunks that never ends before 1 GiB; the sender only stops when the peer says so.
    actor EndlessFeed {
        private var sent = 0
        func next() -> [UInt8]? {
            guard sent < 1 << 30 else { return nil }
            sent += 10_000
            return [UInt8](repeating: 0x5A, count: 10_000)
        }
    }

    @Test("A payload past a receive limit fails on both sides, leaves no file, and the endpoint survives",
          .timeLimit(.minutes(5)), arguments: Case.allCases)
    func overLimit(_ limit: Case) async throws {
        let pair = EnginePair(limits: limit.limits)
        _ = try await pair.connect()
        // A sparse 1 GiB file: the sender can only report success after sending all of it, long after the
        // receiver's PAYLOAD_ERROR arrives.
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-limit-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: source) }
        if limit == .smallFileSentWholeOverBudget {
            #expect(FileManager.default.createFile(atPath: source.path, contents: Data(repeating: 7, count: 1_000)))
        } else {
            #expect(FileManager.default.createFile(atPath: source.path, contents: nil))
            try FileHandle(forWritingTo: source).truncate(atOffset: 1 << 30)
        }
        switch limit {
        case .fileOverBudget, .fileOverFreeSpaceFloor, .smallFileSentWholeOverBudget:
            try await pair.discoverer.send(.file(source, name: "big.bin", parentFolder: "in"), to: "ADVR", id: 31)
        case .streamOverBudget:
            let feed = EndlessFeed()
            try await pair.discoverer.send(.stream(next: { await feed.next() }), to: "ADVR", id: 31)
            // The receiving app reads its stream: an unread stream holds the sender back (back-pressure) instead
            // of reaching the budget.
            let event = try await pair.advertiserLog.wait {
                if case .endpoint(.streamReceived(_, 31, _)) = $0 { true } else { false }
            }
            let stream = try #require({ if case .endpoint(.streamReceived(_, _, let s)) = event { s } else { nil } }())
            Task { for try await _ in stream {} }
        }
        for (log, outgoing) in [(pair.advertiserLog, false), (pair.discovererLog, true)] {
            let event = try await log.wait(timeout: .seconds(60)) {
                if case .endpoint(.transferUpdate(_, let u, outgoing)) = $0 { u.payloadID == 31 && isFinal(u.status) } else { false }
            }
            let update = try #require({ if case .endpoint(.transferUpdate(_, let u, _)) = event { u } else { nil } }())
            #expect(update.status == .failure, "outgoing: \(outgoing)")
        }
        let leftovers = try FileManager.default.subpathsOfDirectory(atPath: pair.receiveDirectory.path)
        #expect(!leftovers.contains { $0.hasSuffix("big.bin") || $0.hasSuffix(".partial") }, "\(leftovers)")
        // The connection is still up: a small BYTES payload gets through.
        try await pair.discoverer.send(.bytes([7, 7]), to: "ADVR", id: 32)
        _ = try await pair.advertiserLog.wait { if case .endpoint(.bytesReceived(_, 32, [7, 7])) = $0 { true } else { false } }
        #expect(await pair.advertiser.connectedEndpoints() == ["DISC"])
    }

    @Test("An engine removes stale partial files of a crashed run when it starts (in the background)", .timeLimit(.minutes(5)))
    func stalePartialsRemovedAtStart() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-stale-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("f"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: directory.appendingPathComponent(".nearby-77.partial"))
        try Data("x".utf8).write(to: directory.appendingPathComponent("f/.nearby-78.partial"))
        try Data("x".utf8).write(to: directory.appendingPathComponent("kept.bin"))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let engine = NearbyEngine(
            configuration: EngineConfiguration(serviceID: "com.example.test", receiveDirectory: directory, logger: logger),
            mediums: [])
        await engine.waitForStaleFileCleanup()
        #expect(try FileManager.default.subpathsOfDirectory(atPath: directory.path).sorted() == ["f", "kept.bin"])
        await engine.shutdown()
    }
}
