import Foundation
import Logging
import NearbyCore
import NearbyWire

/// The BLE medium: Nearby BLE advertisements (service data 0xFEF3) and L2CAP LE credit-based channels, through a
/// ``BLERadio``: our user-space ``BLEHost`` on an HCI controller (``UserSpaceHostRadio``) or the kernel's stack
/// (``BlueZRadio``).
///
/// Advertising: endpoint info of at most 17 bytes uses the fast advertisement form on legacy advertising (the
/// fast form has no PSM; the channel server then listens on ``Configuration/fastAdvertisementPSM``); longer endpoint
/// info uses the regular form with the PSM in its extra fields on an extended advertising set. Discovery decodes
/// both forms from legacy and extended reports, reports an endpoint found once and lost when it has not been seen
/// for ``Configuration/lostTimeout`` (one timer per advertiser, no polling).
///
/// From its first use on, the medium follows its radio's state (``radioStates()``). When the radio is usable again
/// after a problem (the user-space host's transport reopened, `bluetoothd` back, the adapter powered on again),
/// advertising starts again with the same data and PSM and discovery scans again, without restarting the
/// process; endpoints found before stay subject to the lost timeout (docs/BLE-RADIO.md).
package final class BLEMedium: MediumDriver {
    /// Medium settings.
    package struct Configuration: Sendable {
        /// The controller of the user-space host; `nil` for a medium made on a radio of its own
        /// (``BLEMedium/init(radio:configuration:logger:)``).
        package var transport: HCITransportSpec?
        /// Host settings of the user-space host (timeouts, channel MTU/MPS/credits).
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

        /// Creates a configuration for a medium on a radio given to ``BLEMedium/init(radio:configuration:logger:)``.
        package init() {
            self.transport = nil
        }
    }

    /// The Nearby 16-bit service UUID (Copresence) carrying the advertisement as service data.
    package static let serviceUUID: UInt16 = 0xFEF3

    /// `MediumKind.ble`.
    package let kind: MediumKind = .ble
    /// The settings.
    package let configuration: Configuration
    /// The radio advertising, scanning and carrying the channels.
    package let radio: any BLERadio
    private let logger: Logger
    private let watch = BLERadioWatch()

    /// Creates a medium whose user-space host opens the controller of `configuration.transport` on first use.
    /// - Precondition: `configuration.transport` is set (use ``init(radio:configuration:logger:)`` otherwise).
    package convenience init(configuration: Configuration, logger: Logger = Logger(label: "nearby.ble")) {
        guard let transport = configuration.transport else {
            preconditionFailure("BLEMedium(configuration:) needs a transport; pass a radio instead")
        }
        var hostLogger = logger
        hostLogger[metadataKey: "medium"] = "ble"
        let radio = UserSpaceHostRadio(
            transport: transport, configuration: configuration.host, clock: configuration.clock, logger: hostLogger)
        self.init(radio: radio, configuration: configuration, logger: logger)
    }

    /// Creates a medium on `radio`; `configuration.transport` and `configuration.host` are not used.
    package init(radio: any BLERadio, configuration: Configuration = .init(), logger: Logger = Logger(label: "nearby.ble")) {
        self.configuration = configuration
        self.radio = radio
        var logger = logger
        logger[metadataKey: "medium"] = "ble"
        self.logger = logger
    }

    /// Creates a medium for the `--hci` transport string.
    /// - Throws: `.invalidArgument` for a malformed transport string.
    package convenience init(hci: String, logger: Logger = Logger(label: "nearby.ble")) throws {
        self.init(configuration: Configuration(transport: try HCITransportSpec(parsing: hci)), logger: logger)
    }

    /// The user-space host, opening the controller on first use.
    /// - Throws: `.mediumUnavailable` when the medium runs on another radio.
    package func host() async throws -> BLEHost {
        guard let userSpace = radio as? UserSpaceHostRadio else {
            throw NearbyError(.mediumUnavailable, "the BLE medium runs on \(radio), not on a user-space host")
        }
        return try await userSpace.host()
    }

    deinit {
        watch.stop()
    }

    /// Closes the controller connection.
    package func shutdown() async {
        watch.stop()
        await radio.shutdown()
    }

    /// The radio's state from the medium's first use on (advertising, discovery or connecting): the current state
    /// first, then every change, until the consumer stops iterating or the medium shuts down.
    package func radioStates() -> AsyncStream<BLERadioState> {
        watch.broadcast.stream()
    }

    private func watchRadio() {
        watch.start(radio: radio, logger: logger)
    }

    // MARK: - Advertising

    package func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        let radio = self.radio
        watchRadio()
        try await radio.open()
        let endpointID = try EndpointID(request.endpointID)
        let useFast = request.endpointInfo.count <= BleConnectionsAdvertisement.maxFastEndpointInfoLength
            && !configuration.alwaysUseExtendedAdvertising
        let logger = self.logger
        let accept: @Sendable (any L2CAPSDUChannel) -> Void = { channel in
            logger.debug("incoming L2CAP channel", metadata: ["peer": "\(channel.peer)"])
            onIncoming(BLEEndpointChannel(channel: channel))
        }
        let server = try await radio.listen(psm: useFast ? configuration.fastAdvertisementPSM : nil, onChannel: accept)
        let psm = server.psm
        let token = Array(SHA256Digest.hash(utf8: String(UInt64.random(in: 0...UInt64.max))).prefix(2))
        let advertisement: BLEAdvertisement
        let advertising: BLERadioHandle
        do {
            if useFast {
                let connections = try BleConnectionsAdvertisement.fast(
                    pcp: request.pcp, endpointID: endpointID, endpointInfo: request.endpointInfo)
                let medium = try BleMediumAdvertisement.fast(data: connections.encodedBytes, deviceToken: token)
                advertisement = BLEAdvertisement(
                    serviceUUID: Self.serviceUUID, serviceData: medium.encodedBytes, extended: false, psm: psm,
                    intervalMillis: configuration.advertisingIntervalMillis)
            } else {
                guard try await radio.supportsExtendedAdvertising() else {
                    throw NearbyError(
                        .mediumUnavailable,
                        "endpoint info of \(request.endpointInfo.count) bytes needs extended advertising, which the controller lacks (at most 17 bytes fit a legacy advertisement)")
                }
                let hash = ServiceIDHash.advertisementHash(serviceID: request.serviceID)
                let connections = try BleConnectionsAdvertisement.regular(
                    pcp: request.pcp, serviceIDHash: hash, endpointID: endpointID, endpointInfo: request.endpointInfo)
                let medium = try BleMediumAdvertisement.regular(
                    serviceIDHash: hash, data: connections.encodedBytes, deviceToken: token, psm: psm)
                advertisement = BLEAdvertisement(
                    serviceUUID: Self.serviceUUID, serviceData: medium.encodedBytes, extended: true, psm: psm,
                    intervalMillis: configuration.advertisingIntervalMillis)
            }
            advertising = try await radio.startAdvertising(advertisement)
        } catch {
            await server.stop()
            throw error
        }
        logger.debug(
            "advertising", metadata: ["endpoint": "\(request.endpointID)", "psm": "\(psm)", "fast": "\(useFast)"])
        let sessions = watch.advertisements
        let session = BLEAdvertisingSession(
            advertising: advertising, server: server, advertisement: advertisement, radio: radio, accept: accept,
            advertisedName: "FEF3 \(useFast ? "fast" : "regular") psm \(psm)",
            onStop: { session in _ = sessions.withLock { $0.removeValue(forKey: ObjectIdentifier(session)) } })
        sessions.withLock { $0[ObjectIdentifier(session)] = session }
        return session
    }

    // MARK: - Discovery

    package func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveryEvent.self, throwing: (any Error).self)
        let configuration = self.configuration
        let logger = self.logger
        let radio = self.radio
        let states = watch.broadcast
        watchRadio()
        // Owner: the returned stream, whose `onTermination` cancels it when the consumer stops; it ends then, when
        // the scan fails before the radio ever worked, or, once a scan ended, when the radio watch has stopped (the
        // medium's `shutdown()` or `deinit`).
        let task = Task {
            let run = BLEDiscoveryRun(
                tracker: BLEDiscoveryTracker(serviceID: serviceID, pcp: pcp, lostTimeout: configuration.lostTimeout),
                clock: configuration.clock, events: continuation, logger: logger)
            defer { run.stop() }
            // Scans until cancelled. A scan the radio ends after it had worked (an outage) starts again once the
            // radio is powered again; found endpoints meanwhile age towards the lost timeout as usual.
            var generation = states.poweredCount
            while !Task.isCancelled {
                do {
                    for try await report in radio.scan(preset: configuration.scanPreset) {
                        if Task.isCancelled { break }
                        run.receive(report)
                    }
                    if Task.isCancelled { break }
                    logger.notice("BLE scan ended by the radio; scanning again once it is usable")
                } catch {
                    if Task.isCancelled { break }
                    guard states.poweredCount > 0 else {
                        continuation.finish(throwing: error)
                        return
                    }
                    logger.notice("BLE scan interrupted; scanning again once the radio is usable", metadata: ["error": "\(error)"])
                }
                guard let next = await states.waitUntilPowered(moreThan: generation) else { break }
                generation = next
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }

    // MARK: - Connecting

    package func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        guard case .ble(let addressText, let psm) = route, let address = BLEAddress(string: addressText) else {
            throw NearbyError(.invalidArgument, "the BLE medium cannot connect to \(route)")
        }
        watchRadio()
        let channel = try await radio.connect(to: address, psm: psm ?? configuration.fastAdvertisementPSM)
        logger.debug("connected", metadata: ["peer": "\(address)", "psm": "\(psm ?? configuration.fastAdvertisementPSM)"])
        return BLEEndpointChannel(channel: channel)
    }
}
