import Foundation
import Logging
import NearbyCore
import NearbyWire

/// The BLE medium: Nearby BLE advertisements (service data 0xFEF3) and BLE sockets in Android's formats, through a
/// ``BLERadio``: our user-space ``BLEHost`` on an HCI controller (``UserSpaceHostRadio``) or the kernel's stack
/// (``BlueZRadio``).
///
/// Advertising: endpoint info of at most 17 bytes uses the fast form on legacy advertising; longer endpoint info
/// uses the regular form with the PSM in its extra fields, on an extended advertising set, or without extended
/// advertising as an advertisement header on legacy advertising with the regular form in GATT slot 0. Every
/// advertisement is served by an L2CAP channel server and the Weave GATT service 0xFEF3. Discovery decodes both forms
/// from legacy and extended reports (reading the GATT slots behind a header of our service), reports an endpoint
/// found once and lost when it has not been seen for ``Configuration/lostTimeout`` (one timer per advertiser, no
/// polling).
///
/// Connecting picks the data path as Android does: L2CAP when the advertisement carried a PSM, the Weave GATT socket
/// otherwise; both carry the BLE socket layer (``BLESocketChannel``, docs/BLE-ANDROID.md).
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
        /// Use the regular form (on extended advertising, or behind a header) even for short endpoint info.
        package var alwaysUseExtendedAdvertising = false
        /// Serve the regular form from GATT slots behind an advertisement header even when the controller could
        /// send it as an extended advertisement (as on controllers without extended advertising).
        package var alwaysUseGATTAdvertisement = false
        /// Connect over L2CAP when the peer's advertisement carries a PSM (as Android does with its L2CAP flag on);
        /// `false` always uses the Weave GATT socket.
        package var useL2CAP = true
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
    private let lastDiscoveredServiceID = LockedValue<String?>(nil)

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
        let serviceHashes: Set<[UInt8]> = [BleSocketPacket.serviceIDHash(request.serviceID)]
        let accept: @Sendable (any L2CAPSDUChannel) -> Void = { channel in
            logger.debug("incoming L2CAP channel", metadata: ["peer": "\(channel.peer)"])
            onIncoming(BLESocketChannel.server(link: L2CAPMessageLink(channel: channel), serviceIDHashes: serviceHashes))
        }
        let server = try await radio.listen(psm: useFast ? configuration.fastAdvertisementPSM : nil, onChannel: accept)
        let psm = server.psm
        let token = Array(SHA256Digest.hash(utf8: String(UInt64.random(in: 0...UInt64.max))).prefix(2))
        let advertisement: BLEAdvertisement
        let slots: [[UInt8]]
        let form: String
        let gatt: BLEGATTPublication
        let advertising: BLERadioHandle
        do {
            if useFast {
                let connections = try BleConnectionsAdvertisement.fast(
                    pcp: request.pcp, endpointID: endpointID, endpointInfo: request.endpointInfo)
                let medium = try BleMediumAdvertisement.fast(data: connections.encodedBytes, deviceToken: token)
                advertisement = BLEAdvertisement(
                    serviceUUID: Self.serviceUUID, serviceData: medium.encodedBytes, extended: false, psm: psm,
                    intervalMillis: configuration.advertisingIntervalMillis)
                slots = []
                form = "fast"
            } else {
                let hash = ServiceIDHash.advertisementHash(serviceID: request.serviceID)
                let connections = try BleConnectionsAdvertisement.regular(
                    pcp: request.pcp, serviceIDHash: hash, endpointID: endpointID, endpointInfo: request.endpointInfo)
                let medium = try BleMediumAdvertisement.regular(
                    serviceIDHash: hash, data: connections.encodedBytes, deviceToken: token, psm: psm)
                slots = [medium.encodedBytes]
                if try await radio.supportsExtendedAdvertising(), !configuration.alwaysUseGATTAdvertisement {
                    advertisement = BLEAdvertisement(
                        serviceUUID: Self.serviceUUID, serviceData: medium.encodedBytes, extended: true, psm: psm,
                        intervalMillis: configuration.advertisingIntervalMillis)
                    form = "regular"
                } else {
                    // No extended advertising: the header on legacy advertising, the advertisement in GATT slot 0.
                    let header = try Self.advertisementHeader(serviceID: request.serviceID, slots: slots, psm: psm)
                    advertisement = BLEAdvertisement(
                        serviceUUID: Self.serviceUUID, serviceData: header.encodedBytes, extended: false, psm: psm,
                        intervalMillis: configuration.advertisingIntervalMillis)
                    form = "header"
                }
            }
            gatt = BLEGATTPublication(
                radio: radio, slots: slots, serviceIDHashes: serviceHashes, logger: logger, onSocket: { onIncoming($0) })
            do {
                try await gatt.start()
            } catch {
                guard form != "header" else { throw error }
                // A radio without GATT (BlueZ for now) still takes L2CAP connections.
                logger.notice("advertising without a Weave GATT socket", metadata: ["error": "\(error)"])
            }
            do {
                advertising = try await radio.startAdvertising(advertisement)
            } catch {
                await gatt.stop()
                throw error
            }
        } catch {
            await server.stop()
            throw error
        }
        logger.debug(
            "advertising", metadata: ["endpoint": "\(request.endpointID)", "psm": "\(psm)", "form": "\(form)"])
        let sessions = watch.advertisements
        let session = BLEAdvertisingSession(
            advertising: advertising, server: server, advertisement: advertisement, radio: radio, accept: accept, gatt: gatt,
            advertisedName: "FEF3 \(form) psm \(psm)",
            onStop: { session in _ = sessions.withLock { $0.removeValue(forKey: ObjectIdentifier(session)) } })
        sessions.withLock { $0[ObjectIdentifier(session)] = session }
        return session
    }

    /// The advertisement header for GATT-served advertisements: the service and a random 128-byte dummy ID in the
    /// Bloom filter, the chained hash over the dummy and the slots, and the PSM.
    static func advertisementHeader(serviceID: String, slots: [[UInt8]], psm: UInt16) throws -> BleAdvertisementHeader {
        let dummy = (0..<BleServiceIDBloomFilter.dummyServiceIDLength).map { _ in UInt8.random(in: 0...255) }
        var bloom = BleServiceIDBloomFilter()
        bloom.add(serviceID)
        bloom.add(dummy)
        return try BleAdvertisementHeader(
            supportsExtendedAdvertisement: false, slotCount: slots.count, serviceIDBloomFilter: bloom,
            advertisementHash: BleAdvertisementHeader.advertisementHash(dummyServiceID: dummy, slotAdvertisements: slots),
            psm: psm)
    }

    // MARK: - Discovery

    package func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveryEvent.self, throwing: (any Error).self)
        let configuration = self.configuration
        let logger = self.logger
        let radio = self.radio
        let states = watch.broadcast
        lastDiscoveredServiceID.withLock { $0 = serviceID }
        watchRadio()
        let reader = GATTAdvertisementReader(serviceID: serviceID, radio: radio, clock: configuration.clock, logger: logger)
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
                        if let resolved = await reader.resolve(report) { run.receive(resolved) }
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

    /// Opens a channel for the service this medium discovered last (see ``connect(to:serviceID:)``).
    /// - Throws: `.invalidArgument` when the medium has not discovered yet, so it does not know the service.
    package func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        guard let serviceID = lastDiscoveredServiceID.withLock({ $0 }) else {
            throw NearbyError(.invalidArgument, "a BLE connection needs the service ID; discover first or pass it")
        }
        return try await connect(to: route, serviceID: serviceID)
    }

    /// Opens a BLE socket for `serviceID` to a discovered endpoint: an L2CAP channel to the PSM its advertisement
    /// carries, with Android's framing, command handshake and the socket layer's introduction; without a PSM, a Weave
    /// GATT socket, or L2CAP on the fast form's PSM when the peer or our radio has no Weave (docs/BLE-ANDROID.md).
    package func connect(to route: EndpointRoute, serviceID: String) async throws -> any EndpointChannel {
        guard case .ble(let addressText, let psm) = route, let address = BLEAddress(string: addressText) else {
            throw NearbyError(.invalidArgument, "the BLE medium cannot connect to \(route)")
        }
        watchRadio()
        if let psm, configuration.useL2CAP {
            return try await connectL2CAP(to: address, psm: psm, serviceID: serviceID)
        }
        // No PSM advertised (the fast form never has one): a Weave GATT socket, as Android's BleConnectImpl does.
        do {
            let gatt = try await radio.connectGATT(to: address)
            let link = try await WeaveClientLink.connect(gatt)
            logger.debug("connected", metadata: ["peer": "\(address)", "path": "gatt"])
            return try await BLESocketChannel.connect(link: link, serviceID: serviceID)
        } catch let error as NearbyError where error.code == .mediumUnavailable && configuration.useL2CAP {
            // Our radio cannot be a GATT client, or the peer serves no Weave socket (a BlueZ-backed swift-nearby
            // advertiser: BlueZ has no GATT server of ours yet): the same socket layer over L2CAP on the PSM a fast
            // advertisement implies, where our advertisers always listen. Android never needs this: it serves Weave.
            let implied = configuration.fastAdvertisementPSM
            logger.debug(
                "no Weave socket; trying L2CAP on the fast advertisement's PSM",
                metadata: ["peer": "\(address)", "psm": "\(implied)", "error": "\(error)"])
            return try await connectL2CAP(to: address, psm: implied, serviceID: serviceID)
        }
    }

    /// An L2CAP channel to `psm` with Android's framing, command handshake and the socket layer's introduction.
    private func connectL2CAP(to address: BLEAddress, psm: UInt16, serviceID: String) async throws -> any EndpointChannel {
        let channel = try await radio.connect(to: address, psm: psm)
        logger.debug("connected", metadata: ["peer": "\(address)", "psm": "\(psm)", "path": "l2cap"])
        return try await BLESocketChannel.connect(link: L2CAPMessageLink(channel: channel), serviceID: serviceID)
    }
}
