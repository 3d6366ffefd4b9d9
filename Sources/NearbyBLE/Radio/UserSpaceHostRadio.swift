import Logging
import NearbyCore
import NearbyWire

/// The ``BLERadio`` of our own user-space HCI host: a ``BLEHost`` on a controller it owns (`tcp:`, `uart:`,
/// `hci:N`), opened on first use and opened again on the next use after it failed.
package final class UserSpaceHostRadio: BLERadio {
    /// The controller.
    package let transport: HCITransportSpec
    private let provider: HostProvider

    /// A radio on the controller at `transport`; nothing is opened yet.
    package init(transport: HCITransportSpec, configuration: BLEHost.Configuration = .init(), logger: Logger) {
        self.transport = transport
        self.provider = HostProvider(transport: transport, configuration: configuration, logger: logger)
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

    package func states() -> AsyncStream<BLERadioState> {
        let (stream, continuation) = AsyncStream.makeStream(of: BLERadioState.self)
        let provider = self.provider
        let task = Task {
            let host: BLEHost
            do {
                host = try await provider.host()
            } catch {
                continuation.yield(.unavailable(Self.nearbyError(error)))
                continuation.finish()
                return
            }
            continuation.yield(.powered)
            let (failed, failure) = AsyncStream.makeStream(of: NearbyError.self)
            let token = await host.addFailureObserver { failure.yield($0); failure.finish() }
            var reason: NearbyError?
            for await error in failed { reason = error }
            await host.removeFailureObserver(token)
            // The host is opened again only when something uses the radio again; the stream ends here.
            if let reason { continuation.yield(.unavailable(reason)) }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    package func shutdown() async {
        await provider.shutdown()
    }

    private static func nearbyError(_ error: any Error) -> NearbyError {
        error as? NearbyError ?? NearbyError(.mediumUnavailable, "the BLE controller cannot be used", cause: error)
    }
}

/// Opens the host once, on first use, and shares it.
actor HostProvider {
    private let transport: HCITransportSpec
    private let configuration: BLEHost.Configuration
    private let logger: Logger
    private var opening: Task<BLEHost, any Error>?

    init(transport: HCITransportSpec, configuration: BLEHost.Configuration, logger: Logger) {
        self.transport = transport
        self.configuration = configuration
        self.logger = logger
    }

    func host() async throws -> BLEHost {
        if let opening {
            let host = try await opening.value
            if await host.failureReason == nil { return host }
        }
        let transport = self.transport
        let configuration = self.configuration
        let logger = self.logger
        let task = Task { try await BLEHost.open(transport, configuration: configuration, logger: logger) }
        opening = task
        return try await task.value
    }

    func shutdown() async {
        if let host = try? await opening?.value { await host.close() }
        opening = nil
    }
}
