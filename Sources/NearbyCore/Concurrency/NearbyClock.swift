/// The clock every timer in the engine and the mediums reads: "how long since start" and "sleep this long".
///
/// It wraps any `Clock` whose duration is `Duration` (the system's `ContinuousClock` in production, a
/// `ManualClock` from the `NearbyTesting` product in tests) so that code holding it needs no generic parameter and
/// can compare instants as plain `Duration`s since the clock was wrapped.
package struct NearbyClock: Sendable {
    private let elapsed: @Sendable () -> Duration
    private let sleeper: @Sendable (Duration) async throws -> Void

    /// Wraps `clock`; `now` counts from this moment.
    package init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        elapsed = { start.duration(to: clock.now) }
        if C.self == ContinuousClock.self {
            // The system's clock sleeps on a timer that cancellation frees (DispatchTimerSleep): a cancelled
            // Task.sleep holds its timer until the deadline.
            sleeper = { duration in try await DispatchTimerSleep.sleep(for: duration) }
        } else {
            sleeper = { duration in
                try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil)
            }
        }
    }

    /// Wraps an existential clock (opened to its concrete type).
    package init(any clock: any Clock<Duration>) {
        self = Self.open(clock)
    }

    private static func open<C: Clock<Duration>>(_ clock: C) -> NearbyClock { NearbyClock(clock) }

    /// The system's continuous clock.
    package static var continuous: NearbyClock { NearbyClock(ContinuousClock()) }

    /// Time since this clock was wrapped.
    package var now: Duration { elapsed() }

    /// Suspends for `duration` of this clock's time; throws `CancellationError` when the task is cancelled.
    package func sleep(for duration: Duration) async throws {
        guard duration > .zero else {
            try Task.checkCancellation()
            return
        }
        try await sleeper(duration)
    }
}
