import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// The session's parts on their own: the timers on a ``ManualClock`` and the payload sender on an in-memory
/// channel, without a session around them.
struct SessionPartsTests {
    @Test("A timer fires once its time has come; re-arming replaces it and a cancelled timer never fires", .timeLimit(.minutes(5)))
    func timers() async throws {
        let clock = ManualClock()
        let timers = SessionTimers<String>(clock: NearbyClock(clock))
        let fired = LockedValue<[String]>([])
        let record: @Sendable (String) -> @Sendable (UInt64) async -> Void = { key in
            { generation in if timers.claim(key, generation: generation) { fired.withLock { $0.append(key) } } }
        }
        timers.schedule("keep", after: .seconds(5), fire: record("keep"))
        timers.schedule("gone", after: .seconds(1), fire: record("gone"))
        timers.schedule("keep", after: .seconds(2), fire: record("keep"))
        timers.cancel("gone")
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(2))
        _ = try await eventually("the re-armed timer") { fired.withLock { $0 } == ["keep"] ? true : nil }
        #expect(!timers.isArmed("keep"))
        timers.stop()
        timers.schedule("late", after: .zero, fire: record("late"))
        #expect(!timers.isArmed("late"))
    }

    @Test("The payload sender waits at a closed gate, then sends a BYTES payload as one chunk and a last frame", .timeLimit(.minutes(5)))
    func senderOnAnInMemoryChannel() async throws {
        let harness = SenderHarness()
        let (sender, gate, updates) = (harness.sender, harness.gate, harness.updates)
        gate.close()
        try sender.send(.bytes([1, 2, 3]), id: 5)
        #expect(throws: NearbyError.self) { try sender.send(.bytes([4]), id: 5) }
        gate.open()
        var bodies: [[UInt8]] = []
        for _ in 0..<2 {
            let body = try #require(try await harness.peer.readFrame())
            guard case .payloadTransfer(let transfer) = try OfflineFrameParser.parse(body) else {
                Issue.record("not a payload frame")
                return
            }
            #expect(transfer.payloadHeader.id == 5)
            bodies.append(Array(transfer.payloadChunk.body))
        }
        #expect(bodies == [[1, 2, 3], []])
        _ = try await eventually("the success update") {
            updates.withLock { $0.last?.status } == .success ? true : nil
        }
        await harness.end()
    }
}
