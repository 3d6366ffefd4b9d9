import Foundation
import Logging
import NearbyCore
import NearbyWire

/// Settings of a ``ConnectionManager`` beyond Google's API.
public struct ConnectionOptions: Sendable {
    /// The mediums to use, in priority order. Default: Wi-Fi LAN. Mediums swift-nearby does not implement are
    /// ignored; `.ble` needs ``bluetoothController``.
    public var mediums: [Medium]
    /// The Bluetooth controller `.ble` runs on. Default: none (BLE unavailable).
    public var bluetoothController: BluetoothController?
    /// Where received files are written. Default: the current directory.
    public var receiveDirectory: URL
    /// Keep-alive timing asked of peers. Default: 5 s interval, 30 s timeout.
    public var keepAlive: KeepAliveSettings
    /// The TCP port to listen on when advertising; `nil` lets the system choose.
    public var listenPort: Int?
    /// Whether, as the advertiser, to move a connection to a faster medium once connected (BLE to Wi-Fi LAN, when
    /// both sides have Wi-Fi LAN). Reported as ``ConnectionEvent/mediumChanged(_:medium:)``. Default: `true`.
    public var autoUpgradeBandwidth: Bool
    /// How long an advertiser keeps a new connection on its first medium before offering the upgrade. Default:
    /// zero (at once, as other implementations do).
    public var bandwidthUpgradeDelay: Duration
    /// How long a connection whose link broke without a goodbye waits for a new one (auto-reconnect and resume of
    /// the payloads in flight), reported as ``ConnectionEvent/reconnecting(_:error:)`` and
    /// ``ConnectionEvent/reconnected(_:medium:)``. Only between swift-nearby peers that both have it on; other
    /// peers never see any of it. Zero turns it off. Default: 30 s.
    public var autoReconnectWindow: Duration
    /// Limits on what peers can make this process hold: bytes received per connection, free disk space kept,
    /// open payloads, endpoints, decision and write deadlines. Default: `ResourceLimits.init()`.
    public var limits: ResourceLimits
    /// The logger. Set its level to `.debug` for the debug log of every internal event.
    public var logger: Logger
    /// Drivers made elsewhere (the in-memory medium of NearbyTesting, test doubles); when set they are used instead
    /// of ``mediums``.
    package var drivers: [any MediumDriver]?
    /// The `os_info` type of our CONNECTION_RESPONSE frames (nil: left out), for applications whose peers read it
    /// (Quick Share).
    package var reportedOSType: ProtoOsInfo.OsType?
    /// Names incoming files instead of their payload headers, or refuses them (`EngineConfiguration.incomingFileNaming`).
    package var incomingFileNaming: IncomingFileNaming?

    /// Creates options.
    public init(
        mediums: [Medium] = [.wifiLAN], bluetoothController: BluetoothController? = nil,
        receiveDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        keepAlive: KeepAliveSettings = .default, listenPort: Int? = nil, autoUpgradeBandwidth: Bool = true,
        bandwidthUpgradeDelay: Duration = .zero, limits: ResourceLimits = .init(),
        logger: Logger = Logger(label: "nearby"), autoReconnectWindow: Duration = .seconds(30)
    ) {
        self.autoReconnectWindow = autoReconnectWindow
        self.mediums = mediums
        self.bluetoothController = bluetoothController
        self.receiveDirectory = receiveDirectory
        self.keepAlive = keepAlive
        self.listenPort = listenPort
        self.autoUpgradeBandwidth = autoUpgradeBandwidth
        self.bandwidthUpgradeDelay = bandwidthUpgradeDelay
        self.limits = limits
        self.logger = logger
    }

    /// Options over drivers made elsewhere (see ``drivers``), in priority order.
    package init(
        drivers: [any MediumDriver], receiveDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        keepAlive: KeepAliveSettings = .default, bandwidthUpgradeDelay: Duration = .zero, logger: Logger = Logger(label: "nearby")
    ) {
        self.init(
            mediums: drivers.map { Medium($0.kind) }, receiveDirectory: receiveDirectory, keepAlive: keepAlive,
            bandwidthUpgradeDelay: bandwidthUpgradeDelay, logger: logger)
        self.drivers = drivers
    }

    /// The drivers a manager runs: ``drivers`` when set, else those ``MediumFactory`` makes for ``mediums``, with the
    /// mediums that could not be made and why.
    func makeDrivers() -> (drivers: [any MediumDriver], problems: [MediumKind: NearbyError]) {
        if let drivers { return (drivers, [:]) }
        return MediumFactory(bluetoothController: bluetoothController, logger: logger).drivers(for: mediums)
    }
}
