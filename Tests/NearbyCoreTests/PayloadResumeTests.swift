import Foundation
import NearbyCore
import NearbyWire
import Testing

/// The receiving side's answers to AUTO_RESUME, PAYLOAD_ACK on completion, and the sending side's replay of a
/// stream (docs/LINK-SAFETY.md).
@Suite("Payload resume points and acknowledgements", .timeLimit(.minutes(1)))
struct PayloadResumeTests {
    typealias Action = IncomingPayloadTracker.Action

    private func chunk(
        _ id: Int64, _ type: ProtoPayloadTransferFrame.PayloadHeader.PayloadType, total: Int64, offset: Int64,
        body: [UInt8]?, index: Int32, last: Bool = false
    ) -> ProtoPayloadTransferFrame {
        OfflineFrames.payloadData(
            header: OfflineFrames.payloadHeader(id: id, type: type, totalSize: total, fileName: type == .file ? "f.bin" : nil),
            offset: offset, body: body.map { Data($0) }, index: index, isLast: last
        ).v1.payloadTransfer
    }

    private func acks(_ actions: [Action]) -> [Int64] {
        actions.compactMap {
            if case .sendControl(let frame) = $0, frame.v1.payloadTransfer.packetType == .payloadAck {
                frame.v1.payloadTransfer.payloadHeader.id
            } else { nil }
        }
    }

    @Test("A file under way resumes at its next chunk index and byte offset")
    func fileUnderWay() {
        var tracker = IncomingPayloadTracker()
        _ = tracker.receive(chunk(7, .file, total: 10, offset: 0, body: [1, 2, 3], index: 0))
        _ = tracker.receive(chunk(7, .file, total: 10, offset: 3, body: [4, 5], index: 1))
        let point = tracker.resumePoint(for: 7)
        #expect(point.outcome == .resumeFromOffset && point.offset == 5 && point.index == 2)
        // The sender goes on from there; the tracker takes it as the next chunk.
        let next = tracker.receive(chunk(7, .file, total: 10, offset: 5, body: [6, 7, 8, 9, 10], index: 2))
        #expect(!next.contains { if case .violation = $0 { true } else { false } })
    }

    @Test("A bytes payload under way starts again from nothing")
    func bytesUnderWay() {
        var tracker = IncomingPayloadTracker()
        _ = tracker.receive(chunk(8, .bytes, total: 4, offset: 0, body: [1, 2, 3, 4], index: 0))
        let point = tracker.resumePoint(for: 8)
        #expect(point.outcome == .resumeFromOffset && point.offset == 0 && point.index == 0)
        _ = tracker.receive(chunk(8, .bytes, total: 4, offset: 0, body: [1, 2, 3, 4], index: 0))
        let end = tracker.receive(chunk(8, .bytes, total: 4, offset: 4, body: nil, index: 1, last: true))
        guard case .bytesReceived(8, let bytes) = end.first else {
            Issue.record("the bytes did not arrive once, whole")
            return
        }
        #expect(bytes == [1, 2, 3, 4])
    }

    @Test("Payloads received whole, failed, or never seen are told apart")
    func settledPayloads() {
        var tracker = IncomingPayloadTracker()
        _ = tracker.receive(chunk(9, .stream, total: -1, offset: 0, body: [1], index: 0))
        _ = tracker.receive(chunk(9, .stream, total: -1, offset: 1, body: nil, index: 1, last: true))
        _ = tracker.receive(chunk(10, .file, total: 4, offset: 0, body: [1], index: 0))
        _ = tracker.failLocally(10)
        #expect(tracker.resumePoint(for: 9).outcome == .alreadyReceived)
        #expect(tracker.resumePoint(for: 10).outcome == .notResumable)
        let unknown = tracker.resumePoint(for: 11)
        #expect(unknown.outcome == .resumeFromOffset && unknown.offset == 0)
    }

    @Test("PAYLOAD_ACK follows a complete payload of each acknowledged kind (files: once in place, by the sink)")
    func acknowledgements() {
        var tracker = IncomingPayloadTracker()
        tracker.acknowledgedKinds = [.bytes, .stream, .file]
        let bytes = tracker.receive(chunk(1, .bytes, total: 1, offset: 0, body: [1], index: 0))
            + tracker.receive(chunk(1, .bytes, total: 1, offset: 1, body: nil, index: 1, last: true))
        #expect(acks(bytes) == [1])
        let stream = tracker.receive(chunk(2, .stream, total: -1, offset: 0, body: [1], index: 0))
            + tracker.receive(chunk(2, .stream, total: -1, offset: 1, body: nil, index: 1, last: true))
        #expect(acks(stream) == [2])
        let file = tracker.receive(chunk(3, .file, total: 1, offset: 0, body: [1], index: 0))
            + tracker.receive(chunk(3, .file, total: 1, offset: 1, body: nil, index: 1, last: true))
        #expect(acks(file).isEmpty)

        var google = IncomingPayloadTracker()
        google.acknowledgedKinds = [.file, .stream]
        let plain = google.receive(chunk(4, .bytes, total: 1, offset: 0, body: [1], index: 0))
            + google.receive(chunk(4, .bytes, total: 1, offset: 1, body: nil, index: 1, last: true))
        #expect(acks(plain).isEmpty)
    }

    @Test("A PAYLOAD_ACK from the peer is about one of our payloads")
    func peerAcknowledgement() {
        var tracker = IncomingPayloadTracker()
        let actions = tracker.receive(OfflineFrames.payloadAck(id: 42).v1.payloadTransfer)
        guard case .outgoingAcknowledged(42) = actions.first else {
            Issue.record("not taken as an acknowledgement: \(actions)")
            return
        }
    }

    @Test("The PAYLOAD_ACK frame has the header Google's receiver sends: the ID and total_size -1")
    func ackFrameLayout() throws {
        let frame = OfflineFrames.payloadAck(id: 0x0102_0304_0506)
        let transfer = frame.v1.payloadTransfer
        #expect(frame.v1.type == .payloadTransfer && transfer.packetType == .payloadAck)
        #expect(transfer.payloadHeader.id == 0x0102_0304_0506 && transfer.payloadHeader.totalSize == -1)
        #expect(!transfer.hasPayloadChunk && !transfer.hasControlMessage)
        // Known answer: the serialized frame, field by field.
        #expect(Hex.encode(OfflineFrames.serialize(frame))
            == "0801121a080322160803121208868a9098a02018ffffffffffffffffff01")
    }

    @Test("The safe-to-disconnect request and ack frames")
    func disconnectionFrames() {
        let request = OfflineFrames.serialize(
            OfflineFrames.disconnection(requestSafeToDisconnect: true, ackSafeToDisconnect: false))
        let ack = OfflineFrames.serialize(
            OfflineFrames.disconnection(requestSafeToDisconnect: true, ackSafeToDisconnect: true))
        #expect(Hex.encode(request) == "0801120808063a0408011000")
        #expect(Hex.encode(ack) == "0801120808063a0408011001")
    }
}

/// The replay buffer behind a stream's resume.
@Suite("Stream replay", .timeLimit(.minutes(1)))
struct StreamReplayTests {
    @Test("Bytes handed out can be had again from any offset still kept; older ones cannot")
    func replays() {
        var replay = StreamReplay()
        replay.record(Data([1, 2, 3]), at: 0)
        replay.record(Data([4, 5]), at: 3)
        replay.record(Data([6, 7, 8, 9]), at: 5)
        #expect(replay.bytes(from: 0) == Data([1, 2, 3, 4, 5, 6, 7, 8, 9]))
        #expect(replay.bytes(from: 4) == Data([5, 6, 7, 8, 9]))
        #expect(replay.bytes(from: 9) == Data())
        #expect(replay.bytes(from: 10) == nil)

        var bounded = StreamReplay()
        let third = Data(repeating: 1, count: StreamReplay.capacity / 3)
        for index in 0..<4 { bounded.record(third, at: Int64(index * third.count)) }
        #expect(bounded.bytes(from: 0) == nil, "the oldest chunk is gone")
        #expect(bounded.bytes(from: Int64(third.count))?.count == 3 * third.count)
    }
}
