import NearbyCore

/// One radio state shared with any number of listeners: each new stream starts with the current state (when one
/// is known) and then gets every change, until its consumer stops iterating. Repeated equal states are dropped.
package final class RadioStateBroadcast: Sendable {
    private struct Values {
        var current: BLERadioState?
        var listeners: [Int: AsyncStream<BLERadioState>.Continuation] = [:]
        var counter = 0
        /// How many times the state became powered.
        var poweredCount = 0
        var finished = false
    }

    /// The lock rule (docs/ARCHITECTURE.md): streams are yielded to and finished after the lock is released, in
    /// the order of the changes. Yielding under the lock deadlocked against a listener's cancellation, whose
    /// `onTermination` (run with the task's status lock held) takes this lock.
    private let values = LockedOutbox(Values())

    package init() {}

    /// The current state, `nil` before the first.
    package var current: BLERadioState? { values.withLock { $0.current } }

    /// How many times the state became ``BLERadioState/powered`` so far (a generation: a larger value means the
    /// radio recovered since).
    package var poweredCount: Int { values.withLock { $0.poweredCount } }

    /// Publishes `state` unless it equals the current one; returns whether it was a change.
    @discardableResult
    package func publish(_ state: BLERadioState) -> Bool {
        values.withLock { values, outbox in
            guard !values.finished, values.current.map({ !Self.same($0, state) }) ?? true else { return false }
            values.current = state
            if case .powered = state { values.poweredCount += 1 }
            let listeners = Array(values.listeners.values)
            outbox.post { for listener in listeners { listener.yield(state) } }
            return true
        }
    }

    /// Waits until the state has become powered more than `count` times (the radio recovered since a moment when
    /// ``poweredCount`` was `count`); returns the new count, or `nil` when cancelled or finished first.
    package func waitUntilPowered(moreThan count: Int) async -> Int? {
        for await _ in stream() {
            let now = poweredCount
            if now > count { return now }
        }
        return nil
    }

    /// A new listener's stream: the current state first, then every change.
    package func stream() -> AsyncStream<BLERadioState> {
        let (stream, continuation) = AsyncStream.makeStream(of: BLERadioState.self, bufferingPolicy: .bufferingNewest(64))
        let key: Int? = values.withLock { values, outbox in
            guard !values.finished else {
                outbox.post { continuation.finish() }
                return nil
            }
            values.counter += 1
            values.listeners[values.counter] = continuation
            if let current = values.current { outbox.post { continuation.yield(current) } }
            return values.counter
        }
        guard let key else { return stream }
        continuation.onTermination = { [weak self] _ in
            _ = self?.values.withLock { $0.listeners.removeValue(forKey: key) }
        }
        return stream
    }

    /// Ends every stream; later publishes are ignored.
    package func finish() {
        values.withLock { values, outbox in
            values.finished = true
            let listeners = Array(values.listeners.values)
            values.listeners = [:]
            outbox.post { for listener in listeners { listener.finish() } }
        }
    }

    /// Powered equals powered; two unavailable states are equal when their messages are.
    package static func same(_ a: BLERadioState, _ b: BLERadioState) -> Bool {
        switch (a, b) {
        case (.powered, .powered): true
        case (.unavailable(let x), .unavailable(let y)): x.code == y.code && x.message == y.message
        default: false
        }
    }
}
