import Logging
import NearbyCore
import NearbyWire

/// Advertising, scanning and adapter state through `bluetoothd` (`org.bluez.LEAdvertisingManager1`,
/// `org.bluez.Adapter1` discovery, `Device1` service data and RSSI): what ``BlueZRadio`` needs besides the kernel's
/// L2CAP sockets. The D-Bus module provides it; ``BlueZRadio`` runs without one and then says so.
package protocol BlueZGAPProvider: Sendable {
    /// Checks that `bluetoothd` serves `adapter` and that it is powered.
    func open(adapter: String) async throws
    /// Whether the adapter advertises extended advertisements (`SupportedSecondaryChannels` / features).
    func supportsExtendedAdvertising(adapter: String) async throws -> Bool
    /// Registers a connectable advertisement carrying the service data; the handle unregisters it.
    func startAdvertising(_ advertisement: BLEAdvertisement, adapter: String) async throws -> BLERadioHandle
    /// LE discovery with duplicates: one report per advertisement seen (address, AD structures rebuilt from
    /// service and manufacturer data, RSSI).
    func scan(adapter: String, preset: ScanPreset) -> AsyncThrowingStream<AdvertisingReport, any Error>
    /// The adapter's state (powered, removed, `bluetoothd` gone, rfkill), current first.
    func states(adapter: String) -> AsyncStream<BLERadioState>
    /// The adapter's own (identity) address and its LE type (`Adapter1.Address`, `AddressType`): what the kernel's
    /// L2CAP sockets bind to so that they use this adapter; `nil` leaves them on `BDADDR_ANY`.
    /// - Throws: `bluetoothUnavailable` when `bluetoothd` or the adapter is missing.
    func adapterAddress(adapter: String) async throws -> BLEAddress?
    /// Releases the D-Bus connection (stops advertising and scanning); a later call opens it again.
    func shutdown() async
    /// Connects to `address` as a GATT client through `bluetoothd` (`Device1`, `GattCharacteristic1`).
    /// - Throws: `.mediumUnavailable` when this provider has no GATT client (the default).
    func connectGATT(to address: BLEAddress, adapter: String) async throws -> any BLEGATTClientConnection
}

extension BlueZGAPProvider {
    /// Nothing to release.
    package func shutdown() async {}

    /// No GATT client: `.mediumUnavailable`.
    package func connectGATT(to address: BLEAddress, adapter: String) async throws -> any BLEGATTClientConnection {
        throw NearbyError(.mediumUnavailable, "this BlueZ provider has no GATT client")
    }

    /// No address known: sockets bind to any adapter.
    package func adapterAddress(adapter: String) async throws -> BLEAddress? { nil }
}

/// The ``BLERadio`` of the system's Bluetooth stack: L2CAP LE credit-based channels through the kernel's sockets
/// (``KernelL2CAP``), advertising and scanning through `bluetoothd` (an injected ``BlueZGAPProvider``). The
/// adapter stays BlueZ's, so the desktop's other Bluetooth devices keep working.
///
/// Without a ``BlueZGAPProvider`` only the channels work: advertising, scanning and ``open()`` throw a
/// `bluetoothUnavailable` error that says the D-Bus part is missing.
package final class BlueZRadio: BLERadio {
    /// The adapter, like `hci0`.
    package let adapter: String
    /// Kernel socket settings (MTU, security level, local address).
    package let socketOptions: KernelL2CAP.Options
    private let gap: (any BlueZGAPProvider)?
    private let logger: Logger

    /// A radio on `adapter`, advertising and scanning through `gap` when given.
    package init(
        adapter: String = "hci0", gap: (any BlueZGAPProvider)? = nil, socketOptions: KernelL2CAP.Options = .init(),
        logger: Logger = Logger(label: "nearby.ble.bluez")
    ) {
        self.adapter = adapter
        self.gap = gap
        self.socketOptions = socketOptions
        var logger = logger
        logger[metadataKey: "adapter"] = "\(adapter)"
        self.logger = logger
    }

    /// `BlueZ on hciN`.
    package var description: String { "BlueZ on \(adapter)" }

    /// The error of an operation that needs `bluetoothd` when no D-Bus provider was given.
    package var missingGAPError: NearbyError {
        NearbyError(
            NearbyError.Code(rawValue: "bluetoothUnavailable"),
            "BlueZ advertising needs the BlueZ D-Bus layer (org.bluez.LEAdvertisingManager1, Adapter1 discovery), which this build does not include yet; only L2CAP channels work through the kernel on \(adapter). Use --hci tcp:HOST:PORT, uart:/dev/ttyX or hci:N for the user-space host")
    }

    private func requireGAP() throws -> any BlueZGAPProvider {
        guard let gap else { throw missingGAPError }
        return gap
    }

    package func open() async throws {
        try await requireGAP().open(adapter: adapter)
    }

    package func supportsExtendedAdvertising() async throws -> Bool {
        try await requireGAP().supportsExtendedAdvertising(adapter: adapter)
    }

    package func startAdvertising(_ advertisement: BLEAdvertisement) async throws -> BLERadioHandle {
        try await requireGAP().startAdvertising(advertisement, adapter: adapter)
    }

    package func scan(preset: ScanPreset) -> AsyncThrowingStream<AdvertisingReport, any Error> {
        guard let gap else {
            return AsyncThrowingStream { $0.finish(throwing: missingGAPError) }
        }
        return gap.scan(adapter: adapter, preset: preset)
    }

    /// The socket options of this radio's listening and connecting sockets: ``socketOptions``, bound to the
    /// adapter's own address (asked from `bluetoothd`) unless they name a local address already, so that a
    /// machine with two adapters uses the one asked for rather than whichever the kernel routes to.
    /// - Throws: `bluetoothUnavailable` when BlueZ cannot say the adapter's address (no `bluetoothd`, no adapter).
    package func resolvedSocketOptions() async throws -> KernelL2CAP.Options {
        var options = socketOptions
        guard options.localAddress == nil, let gap else { return options }
        options.localAddress = try await gap.adapterAddress(adapter: adapter)
        return options
    }

    /// A GATT client connection through `bluetoothd`. BlueZ serves no GATT of ours yet, so ``publishGATT(_:)``
    /// keeps the protocol's default (`.mediumUnavailable`).
    /// - Throws: `.mediumUnavailable` without a D-Bus provider or with one that has no GATT client, or BlueZ's error.
    package func connectGATT(to address: BLEAddress) async throws -> any BLEGATTClientConnection {
        guard let gap else { throw NearbyError(.mediumUnavailable, "\(self) has no D-Bus layer for GATT") }
        return try await gap.connectGATT(to: address, adapter: adapter)
    }

    package func listen(
        psm: UInt16?, onChannel: @escaping @Sendable (any L2CAPSDUChannel) -> Void
    ) async throws -> BLEL2CAPServer {
        let logger = self.logger
        let options = try await resolvedSocketOptions()
        let server = try KernelL2CAP.listen(psm: psm, options: options) { channel in
            logger.debug("accepted kernel L2CAP channel", metadata: ["peer": "\(channel.peer)", "peerMTU": "\(channel.peerMTU)"])
            onChannel(channel)
        } onError: { error in
            logger.warning("kernel L2CAP server stopped: \(error)")
        }
        logger.debug(
            "kernel L2CAP server listening",
            metadata: ["psm": "\(server.psm)", "local": "\(options.localAddress.map { "\($0)" } ?? "any adapter")"])
        return server
    }

    package func connect(to address: BLEAddress, psm: UInt16) async throws -> any L2CAPSDUChannel {
        try await KernelL2CAP.connect(to: address, psm: psm, options: try await resolvedSocketOptions())
    }

    package func states() -> AsyncStream<BLERadioState> {
        guard let gap else {
            let error = missingGAPError
            return AsyncStream { continuation in
                continuation.yield(.unavailable(error))
                continuation.finish()
            }
        }
        return gap.states(adapter: adapter)
    }

    /// `true`: `BlueZGAP` registers the advertisement and starts discovery again when `bluetoothd` or the adapter
    /// comes back, and the kernel's L2CAP servers do not depend on either.
    package var restoresAfterOutage: Bool { true }

    /// Releases the D-Bus layer's connection; servers and channels are closed by their owners.
    package func shutdown() async {
        await gap?.shutdown()
    }
}

extension BLERadio where Self == BlueZRadio {
    /// The system's BlueZ on `adapter`; advertising and scanning through `gap` (the D-Bus layer) when given.
    package static func bluez(adapter: String = "hci0", gap: (any BlueZGAPProvider)? = nil) -> BlueZRadio {
        BlueZRadio(adapter: adapter, gap: gap)
    }
}

extension BLERadioSpec {
    /// The radio this spec selects: a ``UserSpaceHostRadio`` on the transport, or a ``BlueZRadio`` on the adapter
    /// with `bluezGAP` for advertising and scanning.
    package func makeRadio(
        host: BLEHost.Configuration = .init(), bluezGAP: (any BlueZGAPProvider)? = nil, logger: Logger
    ) -> any BLERadio {
        switch self {
        case .userSpace(let transport):
            return UserSpaceHostRadio(transport: transport, configuration: host, logger: logger)
        case .bluez(let adapter):
            return BlueZRadio(adapter: adapter, gap: bluezGAP, logger: logger)
        }
    }
}
