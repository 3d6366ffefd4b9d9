import NearbyCore
import NearbyTesting
import Testing

@Suite("ManualClock and NearbyClock", .timeLimit(.minutes(5)))
struct ManualClockTests {
    @Test("a sleeper wakes only when the clock reaches its deadline")
    func sleeperWakesAtDeadline() async throws {
        let clock = ManualClock()
        let woke = LockedValue(false)
        let task = Task {
            try await clock.sleep(for: .seconds(10))
            woke.withLock { $0 = true }
        }
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(9))
        #expect(woke.withLock { $0 } == false)
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        try await task.value
        #expect(woke.withLock { $0 })
        #expect(clock.sleeperCount == 0)
    }

    @Test("cancelling a sleeper removes it and throws CancellationError")
    func cancelRemovesSleeper() async {
        let clock = ManualClock()
        let task = Task { try await clock.sleep(for: .seconds(5)) }
        await clock.waitForSleepers(atLeast: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test("NearbyClock over a manual clock reports elapsed time and sleeps on it")
    func nearbyClockWrapsManualClock() async throws {
        let manual = ManualClock()
        let clock = NearbyClock(any: manual)
        #expect(clock.now == .zero)
        let task = Task { try await clock.sleep(for: .milliseconds(1500)) }
        await manual.waitForSleepers(atLeast: 1)
        manual.advanceToNextDeadline()
        try await task.value
        #expect(clock.now == .milliseconds(1500))
    }
}
