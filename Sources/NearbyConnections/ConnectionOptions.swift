import Foundation
import Logging
import NearbyBLE
import NearbyCore
import NearbyWiFiLAN
import NearbyWire

/// Settings of a ``ConnectionManager`` beyond Google's API.
public struct ConnectionOptions: Sendable {
    /// The mediums to use, in priority order. Default: Wi-Fi LAN.
    public var mediums: [any NearbyCore.Medium]
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
    /// Limits on what peers can make this process hold: bytes received per connection, free disk space kept,
    /// open payloads, endpoints, decision and write deadlines. Default: `ResourceLimits.init()`.
    public var limits: ResourceLimits
    /// The logger. Set its level to `.debug` for the debug log of every internal event.
    public var logger: Logger

    /// Creates options.
    public init(
        mediums: [any NearbyCore.Medium]? = nil,
        receiveDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        keepAlive: KeepAliveSettings = .default, listenPort: Int? = nil, autoUpgradeBandwidth: Bool = true,
        bandwidthUpgradeDelay: Duration = .zero, limits: ResourceLimits = .init(),
        logger: Logger = Logger(label: "nearby")
    ) {
        self.mediums = mediums ?? [WiFiLANMedium(logger: logger)]
        self.receiveDirectory = receiveDirectory
        self.keepAlive = keepAlive
        self.listenPort = listenPort
        self.autoUpgradeBandwidth = autoUpgradeBandwidth
        self.bandwidthUpgradeDelay = bandwidthUpgradeDelay
        self.limits = limits
        self.logger = logger
    }

    /// The mediums for a set of kinds: Wi-Fi LAN through Avahi and TCP, BLE through the HCI controller `hci`
    /// names (`tcp:HOST:PORT`, `uart:/dev/ttyX[@BAUD]` or `hci:N`, see `HCITransportSpec`).
    ///
    /// With `kinds` empty: Wi-Fi LAN, plus BLE when `hci` is given. The order is Wi-Fi LAN first, then BLE.
    /// - Throws: `NearbyError` `.invalidArgument` when BLE is asked for without `hci` or `hci` does not
    ///   parse. The controller is opened on first use, so an unreachable one is reported by advertising,
    ///   discovery or connecting, not here.
    public static func mediums(
        _ kinds: Set<MediumKind>, hci: String?, logger: Logger
    ) throws -> [any NearbyCore.Medium] {
        let wantsWiFi = kinds.isEmpty || kinds.contains(.wifiLAN)
        let wantsBLE = kinds.contains(.ble) || (kinds.isEmpty && hci != nil)
        var mediums: [any NearbyCore.Medium] = []
        if wantsWiFi { mediums.append(WiFiLANMedium(logger: logger)) }
        if wantsBLE {
            guard let hci else {
                throw NearbyError(
                    .invalidArgument, "the BLE medium needs an HCI controller: tcp:HOST:PORT, uart:/dev/ttyX[@BAUD] or hci:N")
            }
            mediums.append(try BLEMedium(hci: hci, logger: logger))
        }
        return mediums
    }
}
