/// The host's running timers: one sleeping task per timer the state machines asked for, so that "cancel timer X"
/// stops exactly that sleep and a timer that fires after being restarted or cancelled is ignored.
struct HostTimers {
    /// A timer a machine or the host asked for.
    enum Timer: Hashable, Sendable {
        /// The timeout of HCI command `id` (``HCICommandFlow``).
        case command(HCICommandFlow.CommandID)
        /// The timeout of the outgoing LE connection to a peer.
        case connect(BLEAddress)
        /// The timeout of our L2CAP connection request `identifier` (``L2CAPSignalling``).
        case channelOpen(UInt8)
        /// The ATT transaction timeout of request `id` on connection `handle` (``ATTClientQueue``).
        case att(handle: UInt16, id: ATTClientQueue.RequestID)
        /// The confirmation timeout of the indication outstanding on connection `handle`.
        case indication(handle: UInt16)
        /// How long ``BLEHost/disconnect(handle:)`` waits for the Disconnection Complete event.
        case disconnect(handle: UInt16)
    }

    private var running: [Timer: (generation: Int, task: Task<Void, Never>)] = [:]
    private var generation = 0

    /// The number of timers running.
    var count: Int { running.count }

    /// Starts (or restarts) `timer` with the sleeping task `makeTask` creates for the given generation.
    mutating func start(_ timer: Timer, _ makeTask: (Int) -> Task<Void, Never>) {
        generation += 1
        running[timer]?.task.cancel()
        running[timer] = (generation, makeTask(generation))
    }

    /// Stops `timer` if it runs.
    mutating func cancel(_ timer: Timer) {
        running.removeValue(forKey: timer)?.task.cancel()
    }

    /// A timer's task woke up: `true` (and the timer is done) when it is still the current run of `timer`.
    mutating func fired(_ timer: Timer, generation: Int) -> Bool {
        guard running[timer]?.generation == generation else { return false }
        running[timer] = nil
        return true
    }

    /// Stops every timer.
    mutating func cancelAll() {
        for entry in running.values { entry.task.cancel() }
        running = [:]
    }
}
