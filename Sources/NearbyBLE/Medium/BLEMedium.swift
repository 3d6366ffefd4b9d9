import Foundation
import Logging
import NearbyCore
import NearbyWire

/// The BLE medium: Nearby BLE advertisements (service data 0xFEF3) and L2CAP LE credit-based channels, through a
/// user-space ``BLEHost`` on an HCI controller.
///
/// Advertising: endpoint info of at most 17 bytes uses the fast advertisement form on legacy advertising (the
/// fast form has no PSM; the channel server then listens on ``Configuration/fastAdvertisementPSM``); longer endpoint
/// info uses the regular form with the PSM in its extra fields on an extended advertising set. Discovery decodes
/// both forms from legacy and extended reports, reports an endpoint found once and lost when it has not been seen
/// for ``Configuration/lostTimeout`` (one timer per advertiser, no polling).
package final class BLEMedium: MediumDriver {
    /// Medium settings.
    package struct Configuration: Sendable {
        /// The controller.
        package var transport: HCITransportSpec
        /// Host settings (timeouts, channel MTU/MPS/credits).
        package var host: BLEHost.Configuration = .init()
        /// An endpoint not seen for this long is reported lost (Nearby: 12 s).
        package var lostTimeout: Duration = .seconds(12)
        /// Scan timing while discovering.
        package var scanPreset: ScanPreset = .lowLatency
        /// Advertising interval.
        package var advertisingIntervalMillis = 100
        /// The PSM a fast advertisement implies (it cannot carry one), and the first one this medium listens on.
        package var fastAdvertisementPSM: UInt16 = 0x0080
        /// Use the regular form on extended advertising even for short endpoint info.
        package var alwaysUseExtendedAdvertising = false
        /// The clock the lost-endpoint timers sleep on (a `ManualClock` from `NearbyTesting` in tests).
        package var clock: NearbyClock = .continuous

        /// Creates a configuration for a controller.
        package init(transport: HCITransportSpec) {
            self.transport = transport
        }
    }

    /// The Nearby 16-bit service UUID (Copresence) carrying the advertisement as service data.
    package static let serviceUUID: UInt16 = 0xFEF3

    /// `MediumKind.ble`.
    package let kind: MediumKind = .ble
    /// The settings.
    package let configuration: Configuration
    private let logger: Logger
    private let provider: HostProvider

    /// Creates a medium that opens its controller on first use.
    package init(configuration: Configuration, logger: Logger = Logger(label: "nearby.ble")) {
        self.configuration = configuration
        var logger = logger
        logger[metadataKey: "medium"] = "ble"
        self.logger = logger
        self.provider = HostProvider(configuration: configuration, logger: logger)
    }

    /// Creates a medium for the `--hci` transport string.
    /// - Throws: `.invalidArgument` for a malformed transport string.
    package convenience init(hci: String, logger: Logger = Logger(label: "nearby.ble")) throws {
        self.init(configuration: Configuration(transport: try HCITransportSpec(parsing: hci)), logger: logger)
    }

    /// The host, opening the controller on first use.
    package func host() async throws -> BLEHost {
        try await provider.host()
    }

    /// Closes the controller connection.
    package func shutdown() async {
        await provider.shutdown()
    }

    // MARK: - Advertising

    package func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        let host = try await host()
        let endpointID = try EndpointID(request.endpointID)
        let useFast = request.endpointInfo.count <= BleConnectionsAdvertisement.maxFastEndpointInfoLength
            && !configuration.alwaysUseExtendedAdvertising
        let logger = self.logger
        let accept: @Sendable (L2CAPChannel) -> Void = { channel in
            logger.debug("incoming L2CAP channel", metadata: ["peer": "\(channel.peer)"])
            onIncoming(BLEEndpointChannel(channel: channel))
        }
        let psm: UInt16
        if useFast {
            psm = try await host.listen(psm: configuration.fastAdvertisementPSM, onChannel: accept)
        } else {
            psm = try await host.listen(onChannel: accept)
        }
        let token = Array(SHA256Digest.hash(utf8: String(UInt64.random(in: 0...UInt64.max))).prefix(2))
        let data: [UInt8]
        do {
            if useFast {
                let connections = try BleConnectionsAdvertisement.fast(
                    pcp: request.pcp, endpointID: endpointID, endpointInfo: request.endpointInfo)
                let medium = try BleMediumAdvertisement.fast(data: connections.encodedBytes, deviceToken: token)
                data = AdvertisingData.build(serviceUUID: Self.serviceUUID, serviceData: medium.encodedBytes, maxLength: 31)
                try await host.startAdvertising(data: data, extended: false, intervalMillis: configuration.advertisingIntervalMillis)
            } else {
                guard await host.supportsExtendedAdvertising else {
                    throw NearbyError(
                        .mediumUnavailable,
                        "endpoint info of \(request.endpointInfo.count) bytes needs extended advertising, which the controller lacks (at most 17 bytes fit a legacy advertisement)")
                }
                let hash = ServiceIDHash.advertisementHash(serviceID: request.serviceID)
                let connections = try BleConnectionsAdvertisement.regular(
                    pcp: request.pcp, serviceIDHash: hash, endpointID: endpointID, endpointInfo: request.endpointInfo)
                let medium = try BleMediumAdvertisement.regular(
                    serviceIDHash: hash, data: connections.encodedBytes, deviceToken: token, psm: psm)
                data = AdvertisingData.build(serviceUUID: Self.serviceUUID, serviceData: medium.encodedBytes, maxLength: 251)
                try await host.startAdvertising(data: data, extended: true, intervalMillis: configuration.advertisingIntervalMillis)
            }
        } catch {
            await host.stopListening(psm: psm)
            throw error
        }
        logger.debug(
            "advertising", metadata: ["endpoint": "\(request.endpointID)", "psm": "\(psm)", "fast": "\(useFast)"])
        return BLEAdvertisingSession(host: host, psm: psm, advertisedName: "FEF3 \(useFast ? "fast" : "regular") psm \(psm)")
    }

    // MARK: - Discovery

    package func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveryEvent.self, throwing: (any Error).self)
        let (reports, reportSink) = AsyncStream.makeStream(of: AdvertisingReport.self, bufferingPolicy: .bufferingNewest(256))
        let configuration = self.configuration
        let logger = self.logger
        let provider = self.provider
        let task = Task {
            let host: BLEHost
            let scanToken: Int
            let failureToken: Int
            do {
                host = try await provider.host()
                failureToken = await host.addFailureObserver { error in continuation.finish(throwing: error) }
                scanToken = try await host.addScanHandler(preset: configuration.scanPreset) { reportSink.yield($0) }
            } catch {
                continuation.finish(throwing: error)
                return
            }
            let run = BLEDiscoveryRun(
                tracker: BLEDiscoveryTracker(serviceID: serviceID, pcp: pcp, lostTimeout: configuration.lostTimeout),
                clock: configuration.clock, events: continuation, logger: logger)
            for await report in reports {
                if Task.isCancelled { break }
                run.receive(report)
            }
            run.stop()
            await host.removeScanHandler(scanToken)
            await host.removeFailureObserver(failureToken)
        }
        continuation.onTermination = { _ in
            task.cancel()
            reportSink.finish()
        }
        return stream
    }

    // MARK: - Connecting

    package func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        guard case .ble(let addressText, let psm) = route, let address = BLEAddress(string: addressText) else {
            throw NearbyError(.invalidArgument, "the BLE medium cannot connect to \(route)")
        }
        let host = try await host()
        let handle = try await host.connect(to: address)
        do {
            let channel = try await host.openChannel(handle: handle, psm: psm ?? configuration.fastAdvertisementPSM)
            logger.debug("connected", metadata: ["peer": "\(address)", "psm": "\(psm ?? configuration.fastAdvertisementPSM)"])
            return BLEEndpointChannel(channel: channel)
        } catch {
            await host.disconnect(handle: handle)
            throw error
        }
    }
}

/// Opens the host once, on first use, and shares it.
actor HostProvider {
    private let configuration: BLEMedium.Configuration
    private let logger: Logger
    private var opening: Task<BLEHost, any Error>?

    init(configuration: BLEMedium.Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    func host() async throws -> BLEHost {
        if let opening {
            let host = try await opening.value
            if await host.failureReason == nil { return host }
        }
        let configuration = self.configuration
        let logger = self.logger
        let task = Task { try await BLEHost.open(configuration.transport, configuration: configuration.host, logger: logger) }
        opening = task
        return try await task.value
    }

    func shutdown() async {
        if let host = try? await opening?.value { await host.close() }
        opening = nil
    }
}

/// A running BLE advertisement and its L2CAP server.
package struct BLEAdvertisingSession: AdvertisingSession {
    /// `MediumKind.ble`.
    package let medium: MediumKind = .ble
    /// Always `nil`: BLE listens on a PSM, see ``psm``.
    package let port: Int? = nil
    /// Always `nil`.
    package let discoverabilityProblem: NearbyError? = nil
    /// The form and PSM advertised.
    package let advertisedName: String
    /// The L2CAP PSM accepting channels.
    package let psm: UInt16
    private let host: BLEHost

    init(host: BLEHost, psm: UInt16, advertisedName: String) {
        self.host = host
        self.psm = psm
        self.advertisedName = advertisedName
    }

    /// Stops advertising and the channel server.
    package func stop() async {
        await host.stopAdvertising()
        await host.stopListening(psm: psm)
    }
}
