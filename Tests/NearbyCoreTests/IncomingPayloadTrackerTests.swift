import Foundation
import NearbyCore
import NearbyWire
import Testing

struct IncomingPayloadTrackerTests {
    typealias Action = IncomingPayloadTracker.Action

    private func data(_ id: Int64, _ type: ProtoPayloadTransferFrame.PayloadHeader.PayloadType, total: Int64,
                      offset: Int64, body: [UInt8]?, last: Bool = false, name: String? = nil) -> ProtoPayloadTransferFrame {
        OfflineFrames.payloadData(
            header: OfflineFrames.payloadHeader(id: id, type: type, totalSize: total, fileName: name),
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

    @Test("A bytes payload arrives whole with its last chunk", .timeLimit(.minutes(5)))
    func bytes() {
        var tracker = IncomingPayloadTracker()
        let first = tracker.receive(data(5, .bytes, total: 3, offset: 0, body: [1, 2, 3]))
        #expect(statuses(first) == [.inProgress])
        let last = tracker.receive(data(5, .bytes, total: 3, offset: 3, body: nil, last: true))
        guard case .bytesReceived(5, let bytes) = last.first else { Issue.record("no bytes"); return }
        #expect(bytes == [1, 2, 3])
        #expect(statuses(last) == [.success])
    }

    @Test("A file arrives in order and is finished at its total size", .timeLimit(.minutes(5)))
    func file() {
        var tracker = IncomingPayloadTracker()
        let start = tracker.receive(data(7, .file, total: 4, offset: 0, body: [1, 2], name: "a.bin"))
        guard case .fileStarted(7, "a.bin", _, 4) = start.first else { Issue.record("no start"); return }
        _ = tracker.receive(data(7, .file, total: 4, offset: 2, body: [3, 4]))
        let end = tracker.receive(data(7, .file, total: 4, offset: 4, body: nil, last: true))
        guard case .fileFinished(7, 4) = end.first else { Issue.record("no finish"); return }
    }

    @Test("A last chunk before the total size is a failure, not a success", .timeLimit(.minutes(5)))
    func earlyLastChunk() {
        var tracker = IncomingPayloadTracker()
        _ = tracker.receive(data(7, .file, total: 10, offset: 0, body: [1, 2], name: "a.bin"))
        let end = tracker.receive(data(7, .file, total: 10, offset: 2, body: nil, last: true))
        #expect(statuses(end) == [.failure])
        #expect(end.contains { if case .discard(7, .file) = $0 { true } else { false } })
    }

    @Test("Chunks at impossible offsets are protocol violations", .timeLimit(.minutes(5)))
    func impossibleOffsets() {
        var tracker = IncomingPayloadTracker()
        #expect(violation(tracker.receive(data(9, .file, total: 10, offset: 4, body: [1], name: "x"))) != nil)
        _ = tracker.receive(data(8, .file, total: 10, offset: 0, body: [1, 2], name: "x"))
        #expect(violation(tracker.receive(data(8, .file, total: 10, offset: 5, body: [1]))) != nil)
        var overrun = IncomingPayloadTracker()
        #expect(violation(overrun.receive(data(3, .bytes, total: 2, offset: 0, body: [1, 2, 3]))) != nil)
    }

    @Test("Payload ID 0 is answered with PAYLOAD_ERROR and ignored", .timeLimit(.minutes(5)))
    func zeroID() {
        var tracker = IncomingPayloadTracker()
        let actions = tracker.receive(data(0, .bytes, total: 1, offset: 0, body: [1]))
        guard case .sendControl(let frame) = actions.first else { Issue.record("no control"); return }
        #expect(frame.v1.payloadTransfer.controlMessage.event == .payloadError)
        #expect(tracker.activePayloadIDs.isEmpty)
    }

    @Test("A local cancel tells the peer with its next chunk and reports canceled", .timeLimit(.minutes(5)))
    func localCancel() {
        var tracker = IncomingPayloadTracker()
        _ = tracker.receive(data(4, .stream, total: -1, offset: 0, body: [1]))
        _ = tracker.cancel(4)
        let actions = tracker.receive(data(4, .stream, total: -1, offset: 1, body: [2]))
        guard case .sendControl(let frame) = actions.first else { Issue.record("no control"); return }
        #expect(frame.v1.payloadTransfer.controlMessage.event == .payloadCanceled)
        #expect(statuses(actions) == [.canceled])
        #expect(tracker.receive(data(4, .stream, total: -1, offset: 2, body: [3])).isEmpty)
    }

    @Test("A peer's cancel ends an incoming payload; control for unknown IDs goes to the sender", .timeLimit(.minutes(5)))
    func peerControl() {
        var tracker = IncomingPayloadTracker()
        _ = tracker.receive(data(4, .file, total: 9, offset: 0, body: [1], name: "f"))
        let control = OfflineFrames.payloadControl(
            header: OfflineFrames.payloadHeader(id: 4, type: .file, totalSize: 9), event: .payloadCanceled, offset: 1)
        #expect(statuses(tracker.receive(control.v1.payloadTransfer)) == [.canceled])
        let other = OfflineFrames.payloadControl(
            header: OfflineFrames.payloadHeader(id: 77, type: .file, totalSize: 9), event: .payloadError, offset: 1)
        guard case .outgoingControl(77, .payloadError, _) = tracker.receive(other.v1.payloadTransfer).first else {
            Issue.record("not routed to the sender"); return
        }
    }

    @Test("PAYLOAD_ERROR carries the reason both ways: ours when we fail a payload, the peer's (cut to 512 bytes) to the sender", .timeLimit(.minutes(5)))
    func failureReasons() {
        var tracker = IncomingPayloadTracker()
        _ = tracker.receive(data(4, .file, total: 9, offset: 0, body: [1], name: "f"))
        let failed = tracker.failLocally(4, reason: NearbyError(.endpointIoError, "not enough free space: 1 bytes available"))
        guard case .sendControl(let frame) = failed.first else { Issue.record("no control"); return }
        #expect(frame.v1.payloadTransfer.controlMessage.event == .payloadError)
        #expect(frame.v1.payloadTransfer.controlMessage.swiftNearbyReason == "not enough free space: 1 bytes available")

        let long = String(repeating: "é", count: 400)  // 800 bytes
        let control = OfflineFrames.payloadControl(
            header: OfflineFrames.payloadHeader(id: 78, type: .file, totalSize: 9), event: .payloadError, offset: 1,
            reason: long)
        guard case .outgoingControl(78, .payloadError, let reason?) = tracker.receive(control.v1.payloadTransfer).first else {
            Issue.record("no reason routed to the sender"); return
        }
        #expect(reason == String(repeating: "é", count: 256))
        let bare = OfflineFrames.payloadControl(
            header: OfflineFrames.payloadHeader(id: 79, type: .file, totalSize: 9), event: .payloadError, offset: 1)
        guard case .outgoingControl(79, .payloadError, nil) = tracker.receive(bare.v1.payloadTransfer).first else {
            Issue.record("a reason from nowhere"); return
        }
    }

    @Test("Disconnection fails every payload still arriving", .timeLimit(.minutes(5)))
    func failAll() {
        var tracker = IncomingPayloadTracker()
        _ = tracker.receive(data(1, .file, total: 9, offset: 0, body: [1], name: "f"))
        _ = tracker.receive(data(2, .stream, total: -1, offset: 0, body: [1]))
        #expect(statuses(tracker.failAll()) == [.failure, .failure])
    }
}
