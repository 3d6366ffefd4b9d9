import Foundation
import NearbyCore
import NearbyWire
import Testing

/// The tracker's ``ResourceLimits``: BYTES sizes, open payloads, and the per-connection byte budget.
struct IncomingPayloadLimitsTests {
    typealias Action = IncomingPayloadTracker.Action

    private func data(
        _ id: Int64, _ type: ProtoPayloadTransferFrame.PayloadHeader.PayloadType, total: Int64, offset: Int64,
        body: [UInt8]?, last: Bool = false
    ) -> ProtoPayloadTransferFrame {
        OfflineFrames.payloadData(
            header: OfflineFrames.payloadHeader(id: id, type: type, totalSize: total, fileName: type == .file ? "f" : nil),
            offset: offset, body: body.map { Data($0) }, index: 0, isLast: last
        ).v1.payloadTransfer
    }

    private func violation(_ actions: [Action]) -> NearbyError? {
        for case .violation(let error) in actions { return error }
        return nil
    }

    private func statuses(_ actions: [Action]) -> [TransferStatus] {
        actions.compactMap { if case .update(let update) = $0 { update.status } else { nil } }
    }

    private func sentPayloadError(_ actions: [Action]) -> Bool {
        actions.contains {
            if case .sendControl(let frame) = $0 {
                frame.v1.payloadTransfer.packetType == .control
                    && frame.v1.payloadTransfer.controlMessage.event == .payloadError
            } else { false }
        }
    }

    private func limits(budget: Int64 = 64 << 30, concurrent: Int = 64) -> ResourceLimits {
        var limits = ResourceLimits()
        limits.maxReceivedBytesPerConnection = budget
        limits.maxConcurrentIncomingPayloads = concurrent
        return limits
    }

    @Test("A BYTES payload must announce 0...1,047,552 bytes", .timeLimit(.minutes(5)), arguments: [
        Int64(-1), -2, Int64(PayloadLimits.maxBytesPayloadSize) + 1, 2_000_000, Int64.max,
    ])
    func bytesTotalSize(total: Int64) throws {
        var tracker = IncomingPayloadTracker()
        let error = try #require(violation(tracker.receive(data(3, .bytes, total: total, offset: 0, body: [1]))))
        #expect(error.code == .invalidFrame)
        #expect(error.message.contains("bytes payload"))
    }

    @Test("A BYTES payload of unknown size (-1) is never buffered, however many chunks follow", .timeLimit(.minutes(5)))
    func bytesUnknownSizeNotBuffered() throws {
        var tracker = IncomingPayloadTracker()
        #expect(violation(tracker.receive(data(3, .bytes, total: -1, offset: 0, body: [UInt8](repeating: 1, count: 1000)))) != nil)
        #expect(tracker.activePayloadIDs.isEmpty)
    }

    @Test("BYTES payloads at the edges are accepted and chunks past the total are violations", .timeLimit(.minutes(5)))
    func bytesEdges() throws {
        var tracker = IncomingPayloadTracker()
        let empty = tracker.receive(data(4, .bytes, total: 0, offset: 0, body: nil, last: true))
        #expect(violation(empty) == nil && statuses(empty) == [.success])
        let max = Int64(PayloadLimits.maxBytesPayloadSize)
        #expect(violation(tracker.receive(data(5, .bytes, total: max, offset: 0, body: [1]))) == nil)
        #expect(violation(tracker.receive(data(6, .bytes, total: 2, offset: 0, body: [1, 2]))) == nil)
        #expect(violation(tracker.receive(data(6, .bytes, total: 2, offset: 2, body: [3]))) != nil)
    }

    @Test("FILE and STREAM sizes below -1 are violations; -1 is allowed", .timeLimit(.minutes(5)))
    func fileAndStreamSizes() {
        var tracker = IncomingPayloadTracker()
        #expect(violation(tracker.receive(data(7, .file, total: -2, offset: 0, body: [1]))) != nil)
        #expect(violation(tracker.receive(data(8, .stream, total: -5, offset: 0, body: [1]))) != nil)
        #expect(violation(tracker.receive(data(9, .file, total: -1, offset: 0, body: [1]))) == nil)
        #expect(violation(tracker.receive(data(10, .stream, total: -1, offset: 0, body: [1]))) == nil)
    }

    @Test("One payload more than maxConcurrentIncomingPayloads is a violation", .timeLimit(.minutes(5)))
    func concurrentCap() throws {
        var tracker = IncomingPayloadTracker(limits: limits(concurrent: 3))
        for id in Int64(1)...3 {
            #expect(violation(tracker.receive(data(id, .stream, total: -1, offset: 0, body: [1]))) == nil)
        }
        let error = try #require(violation(tracker.receive(data(4, .bytes, total: 1, offset: 0, body: [1]))))
        #expect(error.message.contains("3"))
        // Finished payloads free their slot.
        var other = IncomingPayloadTracker(limits: limits(concurrent: 1))
        _ = other.receive(data(1, .bytes, total: 1, offset: 0, body: [1], last: true))
        #expect(violation(other.receive(data(2, .bytes, total: 1, offset: 0, body: [1]))) == nil)
    }

    @Test("A file whose announced size exceeds what is left of the budget fails at its header, not the endpoint", .timeLimit(.minutes(5)))
    func budgetAtHeader() {
        var tracker = IncomingPayloadTracker(limits: limits(budget: 100))
        let first = tracker.receive(data(1, .file, total: 60, offset: 0, body: [UInt8](repeating: 0, count: 10)))
        #expect(violation(first) == nil && statuses(first) == [.inProgress])
        // 60 announced (10 received): 40 left.
        let second = tracker.receive(data(2, .file, total: 41, offset: 0, body: [1]))
        #expect(violation(second) == nil)
        #expect(sentPayloadError(second))
        #expect(statuses(second) == [.failure])
        #expect(!second.contains { if case .fileStarted = $0 { true } else { false } })
        #expect(tracker.activePayloadIDs == [1])
        // Its later chunks are ignored, and one that fits still works.
        #expect(tracker.receive(data(2, .file, total: 41, offset: 1, body: [2])).isEmpty)
        let fits = tracker.receive(data(3, .stream, total: 40, offset: 0, body: [1]))
        #expect(violation(fits) == nil && statuses(fits) == [.inProgress])
    }

    @Test("Bytes of unknown size that cross the budget fail that payload on both sides and discard it", .timeLimit(.minutes(5)))
    func budgetWhileReceiving() {
        var tracker = IncomingPayloadTracker(limits: limits(budget: 10))
        #expect(statuses(tracker.receive(data(1, .file, total: -1, offset: 0, body: [UInt8](repeating: 0, count: 6)))) == [.inProgress])
        let crossing = tracker.receive(data(1, .file, total: -1, offset: 6, body: [UInt8](repeating: 0, count: 6)))
        #expect(violation(crossing) == nil)
        #expect(sentPayloadError(crossing))
        #expect(crossing.contains { if case .discard(1, .file) = $0 { true } else { false } })
        #expect(!crossing.contains { if case .fileChunk = $0 { true } else { false } })
        #expect(statuses(crossing) == [.failure])
        #expect(tracker.receivedBytes == 6)
        // Streams count against the same budget; BYTES payloads do not.
        let stream = tracker.receive(data(2, .stream, total: -1, offset: 0, body: [1, 2, 3, 4, 5]))
        #expect(sentPayloadError(stream) && statuses(stream) == [.failure])
        let bytes = tracker.receive(data(3, .bytes, total: 100, offset: 0, body: [UInt8](repeating: 0, count: 100), last: true))
        #expect(statuses(bytes) == [.success])
    }
}
