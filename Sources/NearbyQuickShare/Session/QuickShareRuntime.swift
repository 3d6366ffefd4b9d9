import Foundation
import NearbyConnections
import NearbyCore

/// What a receiver and a sender both run: a `ConnectionManager` on service `NearbySharing`, the session driver
/// over it, the event fan-out, the beacon, and the tasks that feed the driver and the delegate.
final class QuickShareRuntime: Sendable {
    let connectionManager: ConnectionManager
    let fanOut = QuickShareEventFanOut()
    let driver: QuickShareSessionDriver
    /// Owns the event loop, the delegate forwarder and delegate decisions; ``shutdown()`` ends them.
    let tasks = TaskScope()
    private let state = LockedValue(State())

    struct State {
        var started = false
        var stopped = false
        var beacon: QuickShareWakeUpBeacon?
    }

    /// Creates the manager (with Quick Share's connection options) and the driver for `role`.
    init(
        role: QuickShareSessionDriver.Role, options: QuickShareOptions, queue: DispatchQueue,
        freeSpace: @escaping @Sendable () -> Int64?, onOffer: (@Sendable (QuickShareIncomingShare) -> Void)? = nil
    ) {
        let fileNames = LockedValue<[String: [Int64: (String, String)]]>([:])
        connectionManager = ConnectionManager(
            serviceID: QuickShareServiceName.serviceID, strategy: QuickShareServiceName.strategy, queue: queue,
            options: options.connectionOptions(fileNames: fileNames))
        driver = QuickShareSessionDriver(
            manager: connectionManager, role: role, fanOut: fanOut, fileNames: fileNames, freeSpace: freeSpace,
            clock: options.clock, logger: options.logger, onOffer: onOffer)
    }

    deinit {
        // The owner's `stop()` is the orderly way; this only cancels (starting nothing).
        tasks.cancel()
        fanOut.finish()
    }

    /// Starts feeding the manager's events to the driver, and `forward` every event (to a delegate).
    /// - Throws: `.outOfOrderApiCall` when already started or stopped.
    func start(forward: @escaping @Sendable (QuickShareEvent) -> Void) throws {
        let refused = state.withLock { state -> Bool in
            guard !state.started, !state.stopped else { return true }
            state.started = true
            return false
        }
        if refused { throw NearbyError(.outOfOrderApiCall, "already started, or stopped") }
        let events = connectionManager.events
        let forwarded = fanOut.subscribe()
        let driver = self.driver
        guard tasks.spawn({ await driver.run(events) }) else {
            throw NearbyError(.outOfOrderApiCall, "stopped while starting")
        }
        tasks.spawn {
            for await event in forwarded { forward(event) }
        }
    }

    /// Starts the wake-up beacon of `kind` when `enabled`; returns its state.
    func startBeacon(_ kind: QuickShareFastInitBeacon.Kind, enabled: Bool, options: QuickShareOptions) async
        -> QuickShareBeaconStatus
    {
        guard enabled else { return .disabled }
        let (beacon, status) = await QuickShareWakeUpBeacon.start(.sharing(type: kind), logger: options.logger)
        let late = state.withLock { state -> QuickShareWakeUpBeacon? in
            guard !state.stopped else { return beacon }
            state.beacon = beacon
            return nil
        }
        await late?.stop()
        return status
    }

    /// Stops the beacon, runs `before` (stopping advertising or discovery), then shuts the manager, the tasks and
    /// the driver down and ends the event streams.
    func shutdown(before: @Sendable () async -> Void) async {
        let beacon = state.withLock { state -> QuickShareWakeUpBeacon? in
            state.stopped = true
            defer { state.beacon = nil }
            return state.beacon
        }
        await beacon?.stop()
        await before()
        await connectionManager.shutdown()
        await tasks.shutdown()
        await driver.stop()
        fanOut.finish()
    }
}
