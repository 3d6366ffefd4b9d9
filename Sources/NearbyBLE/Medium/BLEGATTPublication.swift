import Logging
import NearbyCore
import NearbyWire

/// The GATT side of one BLE advertisement: the 0xFEF3 service with the Weave socket (and advertisement slots),
/// published on the radio while advertising, and the ``WeaveGATTService`` serving it. Published again after an
/// outage, like the advertisement.
final class BLEGATTPublication: Sendable {
    private struct Running {
        var service: WeaveGATTService
        var task: Task<Void, Never>
    }

    private let radio: any BLERadio
    private let slots: [[UInt8]]
    private let serviceIDHashes: Set<[UInt8]>
    private let onSocket: @Sendable (BLESocketChannel) -> Void
    private let logger: Logger
    private let running = LockedValue<Running?>(nil)

    init(
        radio: any BLERadio, slots: [[UInt8]], serviceIDHashes: Set<[UInt8]>, logger: Logger,
        onSocket: @escaping @Sendable (BLESocketChannel) -> Void
    ) {
        self.radio = radio
        self.slots = slots
        self.serviceIDHashes = serviceIDHashes
        self.onSocket = onSocket
        self.logger = logger
    }

    /// Publishes the service and starts serving it (after stopping a previous run).
    /// - Throws: `.mediumUnavailable` when the radio has no GATT server.
    func start() async throws {
        await stop()
        let server = try await radio.publishGATT(WeaveGATTService.services(slots: slots))
        let service = WeaveGATTService(server: server, serviceIDHashes: serviceIDHashes, logger: logger, onSocket: onSocket)
        // Owner: this publication. It ends when the server's events end (stop() removes the server, or the radio
        // failed); stop() awaits it.
        let task = Task { await service.run() }
        running.withLock { $0 = Running(service: service, task: task) }
    }

    /// Removes the service and waits for its serving task. Open sockets stay open.
    func stop() async {
        guard let current = running.withLock({ running in defer { running = nil }; return running }) else { return }
        await current.service.stop()
        await current.task.value
    }
}
