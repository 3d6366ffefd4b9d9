import Foundation
@testable import NearbyCore
import NearbyTestSupport
import Testing

/// `DispatchTimerSleep`, the sleep behind `NearbyClock.continuous`: it ends when its time is up, and a cancelled
/// sleep ends at once and lets its timer go (a cancelled `Task.sleep` keeps its timer until the deadline).
struct DispatchTimerSleepTests {
    /// Holds the armed timers weakly: they are gone once Dispatch released them.
    final class WeakTimers: Sendable {
        private let timers = LockedValue<[WeakTimer]>([])
        struct WeakTimer: @unchecked Sendable { weak var object: AnyObject? }

        func add(_ timer: AnyObject) { timers.withLock { $0.append(WeakTimer(object: timer)) } }
        var armed: Int { timers.withLock { $0.count } }
        var alive: Int { timers.withLock { $0.filter { $0.object != nil }.count } }
    }

    @Test("A sleep ends when its time is up, and its timer goes away", .timeLimit(.minutes(1)))
    func sleepEnds() async throws {
        let timers = WeakTimers()
        try await withTestTimeout(30, "a 20 ms sleep to end") {
            try await DispatchTimerSleep.sleep(for: .milliseconds(20), armed: { timers.add($0) })
        }
        #expect(timers.armed == 1)
        _ = try await eventually("the fired timer to be released") { timers.alive == 0 ? true : nil }
    }

    @Test("Cancelled sleeps end at once and release their timers long before the deadline", .timeLimit(.minutes(1)))
    func cancelledSleepsReleaseTheirTimers() async throws {
        let timers = WeakTimers()
        let sleepers = (0..<50).map { _ in
            Task { try await DispatchTimerSleep.sleep(for: .seconds(3600), armed: { timers.add($0) }) }
        }
        _ = try await eventually("every sleep to arm its timer") { timers.armed == 50 ? true : nil }
        for sleeper in sleepers { sleeper.cancel() }
        for sleeper in sleepers {
            let outcome = try await withTestTimeout(30, "a cancelled sleep to end") { await sleeper.result }
            #expect(throws: CancellationError.self) { try outcome.get() }
        }
        // An hour-long timer still armed would keep its source alive for the hour.
        _ = try await eventually("the cancelled timers to be released") { timers.alive == 0 ? true : nil }
    }

    @Test("A sleep in a task cancelled before it starts throws at once", .timeLimit(.minutes(1)))
    func cancelledBeforeTheSleep() async throws {
        let timers = WeakTimers()
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await DispatchTimerSleep.sleep(for: .seconds(3600), armed: { timers.add($0) })
        }
        let outcome = try await withTestTimeout(30, "the sleep to throw") { await sleeper.result }
        #expect(throws: CancellationError.self) { try outcome.get() }
        #expect(timers.armed == 0)
    }

    @Test("NearbyClock.continuous sleeps on it: a cancelled engine timer ends at once", .timeLimit(.minutes(1)))
    func continuousClockUsesIt() async throws {
        let clock = NearbyClock.continuous
        let sleeper = Task { try await clock.sleep(for: .seconds(3600)) }
        sleeper.cancel()
        let outcome = try await withTestTimeout(30, "the cancelled clock sleep to end") { await sleeper.result }
        #expect(throws: CancellationError.self) { try outcome.get() }
        let start = clock.now
        try await clock.sleep(for: .milliseconds(30))
        #expect(clock.now - start >= .milliseconds(30))
    }
}
