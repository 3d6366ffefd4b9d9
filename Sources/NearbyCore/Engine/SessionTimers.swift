/// Arms named timers on a clock: each is one task sleeping on the clock (a ``TimerTask``, started and cancelled
/// after this table's lock is released), replaced when the timer is armed again and cancelled when it is disarmed. A timer that fired calls back with its generation; the owner
/// ``claim(_:generation:)``s it, so a fire that raced with re-arming or disarming is ignored.
package final class SessionTimers<Key: Hashable & Sendable>: Sendable {
    private struct Armed {
        var generation: UInt64
        var task: TimerTask
    }

    private struct State {
        var nextGeneration: UInt64 = 0
        var armed: [Key: Armed] = [:]
        var stopped = false
    }

    private let clock: NearbyClock
    private let state = LockedValue(State())

    package init(clock: NearbyClock) { self.clock = clock }

    /// Arms `key` to call `fire` after `delay` of the clock's time, replacing the armed one. Does nothing once
    /// stopped.
    package func schedule(_ key: Key, after delay: Duration, fire: @escaping @Sendable (_ generation: UInt64) async -> Void) {
        let clock = self.clock
        let armed: (timer: TimerTask, generation: UInt64, replaced: TimerTask?)? = state.withLock { state in
            guard !state.stopped else { return nil }
            state.nextGeneration += 1
            let generation = state.nextGeneration
            let timer = TimerTask()
            defer { state.armed[key] = Armed(generation: generation, task: timer) }
            return (timer, generation, state.armed[key]?.task)
        }
        guard let armed else { return }
        armed.replaced?.cancel()
        let generation = armed.generation
        armed.timer.start {
            do { try await clock.sleep(for: delay) } catch { return }
            await fire(generation)
        }
    }

    /// Whether the timer that fired with `generation` is still the armed one; disarms it if so.
    package func claim(_ key: Key, generation: UInt64) -> Bool {
        state.withLock { state in
            guard state.armed[key]?.generation == generation else { return false }
            state.armed[key] = nil
            return true
        }
    }

    /// Whether `key` is armed.
    package func isArmed(_ key: Key) -> Bool { state.withLock { $0.armed[key] != nil } }

    /// Disarms `key`.
    package func cancel(_ key: Key) {
        state.withLock { $0.armed.removeValue(forKey: key)?.task }?.cancel()
    }

    /// Disarms every timer and refuses new ones.
    package func stop() {
        let tasks = state.withLock { state -> [TimerTask] in
            state.stopped = true
            defer { state.armed = [:] }
            return state.armed.values.map(\.task)
        }
        for task in tasks { task.cancel() }
    }
}
