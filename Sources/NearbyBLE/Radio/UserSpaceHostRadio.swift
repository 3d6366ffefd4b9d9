import Logging
import NearbyCore
import NearbyWire

/// The ``BLERadio`` of our own user-space HCI host: a ``BLEHost`` on a controller it owns (`tcp:`, `uart:`,
/// `hci:N`), opened on first use. When the host fails (the HCI transport closed or failed) the radio reports
/// ``BLERadioState/unavailable(_:)`` with the reason and reopens the transport by itself with a backoff on its
/// clock (``HostRecovery``), resetting and initialising the controller, then reports ``BLERadioState/powered``.
package final class UserSpaceHostRadio: BLERadio {
    /// The controller.
    package let transport: HCITransportSpec
    private let provider: HostProvider

    /// A radio on the controller at `transport`; nothing is opened yet. Retries after a lost transport sleep on
    /// `clock`, `backoff` apart.
    package init(
        transport: HCITransportSpec, configuration: BLEHost.Configuration = .init(), clock: NearbyClock = .continuous,
        backoff: HostRecovery.Backoff = .init(), logger: Logger
    ) {
        self.transport = transport
        self.provider = HostProvider(
            clock: clock, backoff: backoff, logger: logger,
            open: { try await BLEHost.open(transport, configuration: configuration, logger: logger) })
    }

    /// A radio whose hosts `open` makes (tests: scripted transports).
    package init(
        transport: HCITransportSpec, clock: NearbyClock, backoff: HostRecovery.Backoff = .init(), logger: Logger,
        open: @escaping @Sendable () async throws -> BLEHost
    ) {
        self.transport = transport
        self.provider = HostProvider(clock: clock, backoff: backoff, logger: logger, open: open)
    }

    /// `user-space host on tcp:…` etc.
    package var description: String { "user-space host on \(transport)" }

    /// The host, opening the controller on first use (and again after the host failed).
    package func host() async throws -> BLEHost {
        try await provider.host()
    }

    package func open() async throws {
        _ = try await provider.host()
    }

    package func supportsExtendedAdvertising() async throws -> Bool {
        try await provider.host().supportsExtendedAdvertising
    }

    package func startAdvertising(_ advertisement: BLEAdvertisement) async throws -> BLERadioHandle {
        let host = try await provider.host()
        try await host.startAdvertising(
            data: advertisement.advertisingData, extended: advertisement.extended,
            intervalMillis: advertisement.intervalMillis)
        return BLERadioHandle { await host.stopAdvertising() }
    }

    package func scan(preset: ScanPreset) -> AsyncThrowingStream<AdvertisingReport, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: AdvertisingReport.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(256))
        let provider = self.provider
        let (stopped, stop) = AsyncStream.makeStream(of: Void.self)
        // Owner: the returned stream; its `onTermination` keeps the handle and finishes `stopped`. It ends when the
        // consumer stops or the host fails (the failure observer finishes the stream), or when opening fails.
        let task = Task {
            let host: BLEHost
            let scanToken: Int
            let failureToken: Int
            do {
                host = try await provider.host()
                failureToken = await host.addFailureObserver { error in continuation.finish(throwing: error) }
                scanToken = try await host.addScanHandler(preset: preset) { continuation.yield($0) }
            } catch {
                continuation.finish(throwing: error)
                return
            }
            // Scans until the consumer stops: nothing wakes up to poll.
            for await _ in stopped {}
            await host.removeScanHandler(scanToken)
            await host.removeFailureObserver(failureToken)
        }
        continuation.onTermination = { _ in
            stop.finish()
            _ = task
        }
        return stream
    }

    package func listen(
        psm: UInt16?, onChannel: @escaping @Sendable (any L2CAPSDUChannel) -> Void
    ) async throws -> BLEL2CAPServer {
        let host = try await provider.host()
        let chosen = try await host.listen(psm: psm) { onChannel($0) }
        return BLEL2CAPServer(psm: chosen) { await host.stopListening(psm: chosen) }
    }

    package func connect(to address: BLEAddress, psm: UInt16) async throws -> any L2CAPSDUChannel {
        let host = try await provider.host()
        let handle = try await host.connect(to: address)
        do {
            return try await host.openChannel(handle: handle, psm: psm)
        } catch {
            await host.disconnect(handle: handle)
            throw error
        }
    }

    /// The current state (opening the controller when nothing did yet), then every change: unavailable with the
    /// reason when the transport is lost, powered once it is open again.
    package func states() -> AsyncStream<BLERadioState> {
        let provider = self.provider
        // In the provider's scope: it ends when the host is open or opening it failed (after `shutdown()`, at once).
        provider.tasks.spawn { _ = try? await provider.host() }
        return provider.broadcast.stream()
    }

    package func shutdown() async {
        await provider.shutdown()
    }
}

/// Opens the host on first use and shares it; performs ``HostRecovery``'s actions: reopening after the host failed,
/// retry timers on the clock, and the states it reports.
actor HostProvider {
    nonisolated let broadcast = RadioStateBroadcast()
    /// One-shot work for this provider (opening the host for a new state listener, handing a host's failure over
    /// to this actor); `shutdown()` cancels it and awaits its end.
    nonisolated let tasks = TaskScope()
    private let clock: NearbyClock
    private let logger: Logger
    private let openHost: @Sendable () async throws -> BLEHost
    private var machine: HostRecovery
    private var current: BLEHost?
    private var opening: (id: Int, task: Task<BLEHost, any Error>)?
    private var openCounter = 0
    private var retry: Task<Void, Never>?

    init(
        clock: NearbyClock, backoff: HostRecovery.Backoff, logger: Logger,
        open: @escaping @Sendable () async throws -> BLEHost
    ) {
        self.clock = clock
        self.logger = logger
        self.openHost = open
        self.machine = HostRecovery(backoff: backoff)
    }

    /// The radio was released without ``shutdown()`` (its manager let go of it): the controller's transport is
    /// closed here, synchronously (nothing is started). That ends the host's reader task, fails what was pending
    /// on the host, and lets the host go: it holds itself through our failure observer until its transport ends,
    /// so without this every released radio kept its host, its reader task and its controller connection.
    deinit {
        current?.transport.close()
    }

    func host() async throws -> BLEHost {
        if let current {
            if let reason = await current.failureReason {
                hostFailed(current, reason)
            } else {
                return current
            }
        }
        if opening == nil { perform(machine.needed()) }
        guard let opening else { throw NearbyError(.mediumUnavailable, "the BLE host could not be opened") }
        return try await opening.task.value
    }

    func shutdown() async {
        machine.shutDown()
        retry?.cancel()
        retry = nil
        let pending = opening?.task
        opening = nil
        let host = current
        current = nil
        if let host { await host.close() }
        if let opened = try? await pending?.value { await opened.close() }
        await tasks.shutdown()
    }

    private func perform(_ actions: [HostRecovery.Action]) {
        for action in actions {
            switch action {
            case .report(let state):
                guard broadcast.publish(state) else { continue }
                if case .unavailable(let error) = state {
                    logger.warning("BLE radio unavailable", metadata: ["error": "\(error)"])
                } else {
                    logger.info("BLE radio ready")
                }
            case .open:
                startOpening()
            case .scheduleRetry(let delay, let generation):
                retry?.cancel()
                let clock = self.clock
                logger.debug("reopening the HCI transport later", metadata: ["delay": "\(delay)"])
                // Owner: `retry`; the next retry and `shutdown()` cancel it; it ends when its sleep ends or is
                // cancelled.
                retry = Task { [weak self] in
                    do { try await clock.sleep(for: delay) } catch { return }
                    await self?.retryFired(generation)
                }
            }
        }
    }

    private func startOpening() {
        openCounter += 1
        let id = openCounter
        let openHost = self.openHost
        // Owner: `opening` while it runs; `host()` callers and `shutdown()` await its value. It ends when `openHost`
        // returns or throws.
        let task = Task<BLEHost, any Error> { [weak self] in
            do {
                let host = try await openHost()
                guard let self else {
                    // The radio was released while its controller was being opened: nobody will use this host.
                    await host.close()
                    throw NearbyError(.mediumUnavailable, "the BLE radio was released while opening its controller")
                }
                await self.opened(host, id: id)
                return host
            } catch {
                let nearby = error as? NearbyError
                    ?? NearbyError(.mediumUnavailable, "the BLE controller cannot be used", cause: error)
                await self?.openFailed(nearby, id: id)
                throw nearby
            }
        }
        opening = (id, task)
    }

    private func opened(_ host: BLEHost, id: Int) async {
        guard opening?.id == id else {
            // Shut down while opening: this host is not wanted.
            await host.close()
            return
        }
        opening = nil
        current = host
        perform(machine.opened())
        let tasks = self.tasks
        _ = await host.addFailureObserver { [weak self] error in
            // A one-shot hop onto this actor, in `tasks`; it ends when `hostFailed` returns.
            guard let self else { return }
            tasks.spawn { await self.hostFailed(host, error) }
        }
    }

    private func openFailed(_ error: NearbyError, id: Int) {
        guard opening?.id == id else { return }
        opening = nil
        perform(machine.openFailed(error))
    }

    private func hostFailed(_ host: BLEHost, _ error: NearbyError) {
        guard current === host else { return }
        current = nil
        perform(machine.hostFailed(error))
    }

    private func retryFired(_ generation: Int) {
        perform(machine.retryTimerFired(generation: generation))
    }
}
