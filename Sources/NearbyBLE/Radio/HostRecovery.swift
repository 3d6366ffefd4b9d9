import NearbyWire

/// The user-space host's life across transport losses, as a value: it is told when an open starts, succeeds or
/// fails, when the open host fails (the HCI transport closed or failed), when a retry timer fires and when the
/// radio is shut down, and returns what to do: report a state, open the transport again (reset and initialise the
/// controller), or schedule the next attempt after a backoff. No clock, no I/O.
///
/// Once something has used the radio, a lost transport is reopened by itself with a growing delay
/// (``Backoff``) until it works again; before first use, and after shutdown until the next use, nothing is
/// retried.
package struct HostRecovery: Sendable {
    /// The delays between attempts: `initial`, doubling up to `maximum`.
    package struct Backoff: Sendable, Hashable {
        /// The first retry's delay.
        package var initial: Duration = .milliseconds(250)
        /// The longest delay.
        package var maximum: Duration = .seconds(8)

        /// Creates a backoff.
        package init(initial: Duration = .milliseconds(250), maximum: Duration = .seconds(8)) {
            self.initial = initial
            self.maximum = maximum
        }

        /// The delay before attempt `attempt` (1 is the first retry).
        package func delay(attempt: Int) -> Duration {
            var delay = initial
            for _ in 1..<max(1, attempt) {
                delay = delay * 2
                if delay >= maximum { return maximum }
            }
            return min(delay, maximum)
        }
    }

    /// What the owner does.
    package enum Action: Sendable, Equatable {
        /// Publish the radio state.
        case report(BLERadioState)
        /// Open the transport and start a new host on it (Reset and the init sequence).
        case open
        /// After `delay`, call ``retryTimerFired(generation:)`` with `generation`.
        case scheduleRetry(after: Duration, generation: Int)

        package static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.report(let a), .report(let b)): RadioStateBroadcast.same(a, b)
            case (.open, .open): true
            case (.scheduleRetry(let a, let g), .scheduleRetry(let b, let h)): a == b && g == h
            default: false
            }
        }
    }

    enum Phase: Sendable, Equatable {
        /// Never used.
        case idle
        /// An open is under way.
        case opening
        /// A host runs.
        case up
        /// Down; a retry is scheduled (its generation).
        case waiting(generation: Int)
    }

    package let backoff: Backoff
    private(set) var phase: Phase = .idle
    /// Failed attempts since the host last worked.
    private(set) var attempts = 0
    /// Whether a host ever ran: only a lost transport is retried by itself; a first open that fails is reported and
    /// tried again at the next use.
    private(set) var everUp = false
    private var generation = 0

    /// Creates the machine.
    package init(backoff: Backoff = Backoff()) {
        self.backoff = backoff
    }

    /// Someone needs the host now (an operation, a state listener) and none runs: open unless one is under way.
    package mutating func needed() -> [Action] {
        switch phase {
        case .idle, .waiting:
            // Using the radio while waiting opens at once; the pending timer is ignored (a newer generation).
            generation += 1
            phase = .opening
            return [.open]
        case .opening, .up:
            return []
        }
    }

    /// The open worked.
    package mutating func opened() -> [Action] {
        phase = .up
        everUp = true
        attempts = 0
        return [.report(.powered)]
    }

    /// The open failed with `error`: report it and retry after the backoff.
    package mutating func openFailed(_ error: NearbyError) -> [Action] {
        guard phase == .opening else { return [] }
        guard everUp else {
            phase = .idle
            return [.report(.unavailable(error))]
        }
        return down(error)
    }

    /// The running host failed (transport closed, read error, corrupt stream).
    package mutating func hostFailed(_ error: NearbyError) -> [Action] {
        guard phase == .up else { return [] }
        return down(error)
    }

    /// A retry timer fired.
    package mutating func retryTimerFired(generation fired: Int) -> [Action] {
        guard case .waiting(let current) = phase, current == fired else { return [] }
        generation += 1
        phase = .opening
        return [.open]
    }

    /// The radio was shut down: back to unused, pending timers ignored (the owner drops the open under way).
    /// The next use opens again.
    package mutating func shutDown() {
        generation += 1
        attempts = 0
        phase = .idle
    }

    private mutating func down(_ error: NearbyError) -> [Action] {
        attempts += 1
        generation += 1
        phase = .waiting(generation: generation)
        return [.report(.unavailable(error)), .scheduleRetry(after: backoff.delay(attempt: attempts), generation: generation)]
    }
}
