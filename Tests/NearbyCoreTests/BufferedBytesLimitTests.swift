import Foundation
import NearbyCore
import NearbyWire
import Testing

/// BYTES payloads buffered in memory: per endpoint and across an engine's endpoints (issue 22, defect 8).
@Suite(.timeLimit(.minutes(1)))
struct BufferedBytesLimitTests {
    typealias Action = IncomingPayloadTracker.Action
    static let big = Int64(PayloadLimits.maxBytesPayloadSize)

    private func chunk(_ id: Int64, total: Int64, offset: Int64 = 0, body: Int = 1, last: Bool = false) -> ProtoPayloadTransferFrame {
        OfflineFrames.payloadData(
            header: OfflineFrames.payloadHeader(id: id, type: .bytes, totalSize: total),
            offset: offset, body: body > 0 ? Data(count: body) : nil, index: 0, isLast: last
        ).v1.payloadTransfer
    }

    private func failedAtLimit(_ actions: [Action]) -> NearbyError? {
        let sentError = actions.contains {
            if case .sendControl(let frame) = $0 { frame.v1.payloadTransfer.controlMessage.event == .payloadError } else { false }
        }
        for case .limitExceeded(_, let error) in actions where sentError { return error }
        return nil
    }

    private func limits(perEndpoint: Int64, total: Int64 = 128 << 20) -> ResourceLimits {
        var limits = ResourceLimits()
        limits.maxBufferedBytesPerEndpoint = perEndpoint
        limits.maxBufferedBytes = total
        return limits
    }

    @Test("one endpoint: the BYTES payload whose announced size crosses the per-endpoint limit fails (PAYLOAD_ERROR), the endpoint stays; finished payloads free their part")
    func perEndpoint() throws {
        var tracker = IncomingPayloadTracker(limits: limits(perEndpoint: 3 * Self.big))
        for id in Int64(1)...3 {
            #expect(failedAtLimit(tracker.receive(chunk(id, total: Self.big))) == nil)
        }
        #expect(tracker.bufferedBytes == 3 * Self.big)
        let refused = try #require(failedAtLimit(tracker.receive(chunk(4, total: Self.big))))
        #expect(refused.code == .limitExceeded && refused.message.contains("for this endpoint"), "\(refused)")
        #expect(Set(tracker.activePayloadIDs) == [1, 2, 3])
        #expect(tracker.receive(chunk(4, total: Self.big, offset: 1)).isEmpty)  // its later chunks are ignored
        // Payload 1 ends (its last chunk arrives early: a failure, not a delivery), which frees its place.
        _ = tracker.receive(chunk(1, total: Self.big, offset: 1, body: 0, last: true))
        #expect(tracker.bufferedBytes == 2 * Self.big)
        #expect(failedAtLimit(tracker.receive(chunk(5, total: Self.big))) == nil)
    }

    @Test("all endpoints share the engine's budget: a payload that crosses it fails; the connection's end gives its part back")
    func acrossEndpoints() throws {
        let budget = BufferedBytesBudget(limit: 4 * Self.big)
        var first = IncomingPayloadTracker(limits: limits(perEndpoint: 16 << 20), budget: budget)
        var second = IncomingPayloadTracker(limits: limits(perEndpoint: 16 << 20), budget: budget)
        for id in Int64(1)...3 { #expect(failedAtLimit(first.receive(chunk(id, total: Self.big))) == nil) }
        #expect(failedAtLimit(second.receive(chunk(1, total: Self.big))) == nil)
        let refused = try #require(failedAtLimit(second.receive(chunk(2, total: Self.big))))
        #expect(refused.message.contains("for all endpoints"), "\(refused)")
        #expect(budget.reservedBytes == 4 * Self.big)
        _ = first.failAll()  // the first connection ended
        #expect(budget.reservedBytes == Self.big)
        #expect(failedAtLimit(second.receive(chunk(3, total: Self.big))) == nil)
        // A delivered payload gives its part back too.
        _ = second.receive(chunk(9, total: 2, body: 2, last: true))
        #expect(budget.reservedBytes == 2 * Self.big)
    }

    @Test("the engine makes one budget of maxBufferedBytes for all its endpoints")
    func engineBudget() async {
        var configuration = EngineConfiguration(serviceID: "budget", receiveDirectory: FileManager.default.temporaryDirectory)
        configuration.limits.maxBufferedBytes = 12_345
        let engine = NearbyEngine(configuration: configuration, mediums: [])
        #expect(engine.bufferBudget.limit == 12_345)
    }

    @Test("the pending-connection policy: a full table takes the newcomer in place of the busiest source's longest-waiting pending incoming connection")
    func pendingPolicy() {
        typealias Policy = PendingConnectionPolicy
        var limits = ResourceLimits()
        limits.maxPendingEndpoints = 4
        limits.maxEndpoints = 6
        func connection(_ id: Int, _ source: String, incoming: Bool = true, pending: Bool = true, at seconds: Int) -> Policy.Connection<Int> {
            .init(id: id, source: source, isIncoming: incoming, isPending: pending, since: .seconds(seconds))
        }
        let stranger = (1...3).map { connection($0, "10.0.0.66", at: $0) }
        let friend = connection(9, "10.0.0.7", at: 0)
        #expect(Policy.decide(source: "10.0.0.8", open: stranger, limits: limits) == .admit)
        // Full: the stranger holds the most, so its oldest (2 s... 1 s) goes, not the friend's older one.
        #expect(Policy.decide(source: "10.0.0.8", open: stranger + [friend], limits: limits) == .admitEvicting(1))
        // A connected endpoint or our own outgoing request is never evicted.
        let settled = [connection(20, "a", pending: false, at: 0), connection(21, "b", incoming: false, at: 0)]
        var small = limits
        small.maxEndpoints = 2
        guard case .refuse = Policy.decide(source: "c", open: settled, limits: small) else {
            Issue.record("expected a refusal")
            return
        }
        // A source at its own cap: its newcomer takes the place of its own oldest; other sources are admitted.
        var capped = limits
        capped.maxPendingEndpointsPerSource = 3
        #expect(Policy.decide(source: "10.0.0.66", open: stranger, limits: capped) == .admitEvicting(1))
        #expect(Policy.decide(source: "10.0.0.7", open: stranger, limits: capped) == .admit)
        // A full table whose only pending connection is the newcomer's own source's: that one goes.
        #expect(Policy.decide(source: "10.0.0.66", open: stranger + [friend], limits: limits) == .admitEvicting(1))
    }
}
