import Foundation
@testable import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// `EndpointChannel.closing(after:clock:)`: the bound that the reconnect handshake, the upgrade's introductions and
/// the prior channel's goodbye wait under. A write stuck on a peer that stopped reading ignores cancellation, so the
/// bound closes the channel at its deadline, or at once when its caller is cancelled.
struct ChannelDeadlineTests {
    @Test("A write stuck past the deadline fails once the deadline closes the channel", .timeLimit(.minutes(2)))
    func deadlineClosesAStuckWrite() async throws {
        let clock = ManualClock()
        let (ours, writing) = try await Self.stuckWrite(under: .seconds(5), clock: clock)
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(5))
        let outcome = try await withTestTimeout(30, "the stuck write to fail") { await writing.result }
        #expect(throws: NearbyError.self) { try outcome.get() }
        #expect(ours.stalledWrites.withLock { $0 } == 0)
    }

    @Test("Cancelling the caller closes the channel at once instead of at the deadline", .timeLimit(.minutes(2)))
    func cancellationClosesAtOnce() async throws {
        let clock = ManualClock()
        let (ours, writing) = try await Self.stuckWrite(under: .seconds(3600), clock: clock)
        writing.cancel()
        // The manual clock never moves: only the cancellation can end the write.
        let outcome = try await withTestTimeout(30, "the cancelled write to fail") { await writing.result }
        #expect(throws: (any Error).self) { try outcome.get() }
        #expect(ours.stalledWrites.withLock { $0 } == 0)
    }

    @Test("A body that ends in time leaves the channel open", .timeLimit(.minutes(2)))
    func endingInTimeKeepsTheChannel() async throws {
        let clock = ManualClock()
        let (ours, theirs) = InMemoryChannel.pair()
        try await ours.closing(after: .seconds(5), clock: NearbyClock(clock)) { try await ours.writeFrame([7]) }
        clock.advance(by: .seconds(10))
        #expect(try await theirs.readFrame() == [7])
        try await ours.writeFrame([8])
        #expect(try await theirs.readFrame() == [8])
    }

    /// A write on a channel that stalls writes, under `closing(after: deadline)`; returns once the write is stuck.
    static func stuckWrite(
        under deadline: Duration, clock: ManualClock
    ) async throws -> (InMemoryChannel, Task<Void, any Error>) {
        let (ours, _) = InMemoryChannel.pair()
        ours.stallsWrites.withLock { $0 = true }
        let writing = Task {
            try await ours.closing(after: deadline, clock: NearbyClock(clock)) { try await ours.writeFrame([1]) }
        }
        _ = try await eventually(within: 30, "the stuck write") { ours.stalledWrites.withLock { $0 } == 1 ? true : nil }
        return (ours, writing)
    }
}
