import NearbyWire

/// What a BLE medium needs from the Bluetooth stack underneath it: connectable advertising of one service-data
/// advertisement, scanning, L2CAP LE credit-based channel servers and clients, and whether the radio is usable.
///
/// Two backends implement it: ``UserSpaceHostRadio`` (our own HCI host on a controller it owns: `tcp:`, `uart:`,
/// `hci:N`) and ``BlueZRadio`` (the kernel's L2CAP sockets, with advertising and scanning through BlueZ). `BLEMedium`
/// and the beacon scanner run on either without knowing which (docs/BLE-RADIO.md).
package protocol BLERadio: Sendable, CustomStringConvertible {
    /// Makes the radio usable (the user-space host opens its controller; BlueZ checks the adapter). Later calls
    /// return at once while it stays usable. The other operations call it themselves.
    /// - Throws: `.mediumUnavailable` / `.bluetoothUnavailable` naming what is missing.
    func open() async throws

    /// Whether advertisements of up to 251 bytes (extended advertising) can be sent.
    func supportsExtendedAdvertising() async throws -> Bool

    /// Starts connectable advertising of `advertisement`; replaces any advertisement this radio sent before.
    /// Returns the handle that stops it.
    func startAdvertising(_ advertisement: BLEAdvertisement) async throws -> BLERadioHandle

    /// Scans with `preset` until the stream's consumer stops iterating; the stream ends with the error that made
    /// the radio unusable.
    func scan(preset: ScanPreset) -> AsyncThrowingStream<AdvertisingReport, any Error>

    /// Serves L2CAP LE credit-based channels on `psm` (a dynamic PSM when `nil`); every accepted channel is passed
    /// to `onChannel`. The server's handle tells the PSM.
    func listen(
        psm: UInt16?, onChannel: @escaping @Sendable (any L2CAPSDUChannel) -> Void
    ) async throws -> BLEL2CAPServer

    /// Opens an L2CAP LE credit-based channel to `psm` at `address` (its LE address type included), making the
    /// LE connection first.
    func connect(to address: BLEAddress, psm: UInt16) async throws -> any L2CAPSDUChannel

    /// The radio's state: the current one first, then every change, until the consumer stops iterating.
    func states() -> AsyncStream<BLERadioState>

    /// Releases the radio (closes the controller connection, servers and channels).
    func shutdown() async

    /// Publishes a GATT server with `services` on every LE connection (replacing the one published before).
    /// - Throws: `.mediumUnavailable` on radios without GATT support (the default).
    func publishGATT(_ services: [GATTServiceDefinition]) async throws -> any BLEGATTServerHandle

    /// Makes an LE connection to `address` as a GATT client.
    /// - Throws: `.mediumUnavailable` on radios without GATT support (the default).
    func connectGATT(to address: BLEAddress) async throws -> any BLEGATTClientConnection

    /// Whether the radio restores advertising, scanning and channel servers by itself after an outage (BlueZ
    /// registers again when `bluetoothd` or the adapter comes back, and the kernel keeps L2CAP servers). When
    /// `false`, `BLEMedium` starts them again once the radio reports ``BLERadioState/powered`` after a problem.
    var restoresAfterOutage: Bool { get }
}

extension BLERadio {
    /// `false`: the medium restarts what was running.
    package var restoresAfterOutage: Bool { false }
}

/// One Nearby BLE advertisement as a radio sends it: service data for a 16-bit UUID.
package struct BLEAdvertisement: Sendable, Hashable {
    /// The 16-bit service UUID the data belongs to (Nearby: 0xFEF3).
    package var serviceUUID: UInt16
    /// The service data (a `BleMediumAdvertisement`).
    package var serviceData: [UInt8]
    /// Whether it needs extended advertising (more than a legacy advertisement's 31 bytes of AD structures).
    package var extended: Bool
    /// The L2CAP PSM whose server the advertisement leads to (for logs; the PSM travels inside `serviceData`).
    package var psm: UInt16
    /// The advertising interval.
    package var intervalMillis: Int

    /// Creates an advertisement.
    package init(serviceUUID: UInt16, serviceData: [UInt8], extended: Bool, psm: UInt16, intervalMillis: Int = 100) {
        self.serviceUUID = serviceUUID
        self.serviceData = serviceData
        self.extended = extended
        self.psm = psm
        self.intervalMillis = intervalMillis
    }

    /// The advertising data: flags, then the service data AD structure, within a legacy (31 bytes) or extended
    /// (251 bytes here) advertisement.
    package var advertisingData: [UInt8] {
        AdvertisingData.build(serviceUUID: serviceUUID, serviceData: serviceData, maxLength: extended ? 251 : 31)
    }
}

/// Whether a radio can be used.
package enum BLERadioState: Sendable {
    /// Powered and usable.
    case powered
    /// Not usable, for the reason given (controller gone, powered off, `bluetoothd` not running, rfkill).
    case unavailable(NearbyError)
}

/// Stops something a radio started (advertising). Stopping twice does nothing more.
package struct BLERadioHandle: Sendable {
    private let stopAction: @Sendable () async -> Void

    /// Creates a handle that runs `stop` when stopped.
    package init(stop: @escaping @Sendable () async -> Void) {
        self.stopAction = stop
    }

    /// Stops.
    package func stop() async {
        await stopAction()
    }
}

/// A running L2CAP LE credit-based channel server.
package struct BLEL2CAPServer: Sendable {
    /// The PSM it accepts channels on.
    package let psm: UInt16
    private let stopAction: @Sendable () async -> Void

    /// Creates a server handle.
    package init(psm: UInt16, stop: @escaping @Sendable () async -> Void) {
        self.psm = psm
        self.stopAction = stop
    }

    /// Stops accepting channels; open channels stay open.
    package func stop() async {
        await stopAction()
    }
}

/// One open L2CAP LE credit-based channel, whichever stack carries it: SDUs out and in, flow-controlled by credits.
package protocol L2CAPSDUChannel: Sendable {
    /// The peer's address.
    var peer: BLEAddress { get }
    /// The largest SDU the peer accepts.
    var peerMTU: Int { get }
    /// The channel for logs (peer and channel IDs or socket).
    var channelDescription: String { get }
    /// Sends one SDU of at most ``peerMTU`` bytes; suspends while the peer grants no credits.
    /// - Throws: `.endpointIoError` when the channel closed, `.invalidArgument` for an SDU above the peer's MTU.
    func send(_ sdu: [UInt8]) async throws
    /// The next SDU; `nil` once the channel closed cleanly.
    func receive() async throws -> [UInt8]?
    /// Closes the channel (and the LE connection once unused, where this side made it). Idempotent.
    func close() async
}

extension L2CAPChannel: L2CAPSDUChannel {
    /// The peer's address and the channel IDs.
    package var channelDescription: String { "\(peer) cid \(localCID)/\(remoteCID)" }

    /// Closes the channel and, on the central side, the LE connection once unused.
    package func close() async {
        await close(disconnectLink: true)
    }
}
