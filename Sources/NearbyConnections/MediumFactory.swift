import Logging
import NearbyBLE
import NearbyBlueZ
import NearbyCore
import NearbyWiFiLAN
import NearbyWire

/// The one place that turns medium choices into the engine's drivers: ``ConnectionManager``, the `nearby` CLI and
/// Nearby Messages all build their Wi-Fi LAN and BLE mediums here.
package struct MediumFactory: Sendable {
    /// The controller BLE runs on; without one, BLE is unavailable.
    package var bluetoothController: BluetoothController?
    /// The logger the drivers log to.
    package var logger: Logger
    /// Whether Wi-Fi LAN discovery started while avahi-daemon is not running waits for it instead of failing
    /// (Nearby Messages: a subscription starts, reports the mDNS problem and finds messages once the daemon runs).
    package var waitForMDNS = false

    /// Creates a factory.
    package init(bluetoothController: BluetoothController?, logger: Logger) {
        self.bluetoothController = bluetoothController
        self.logger = logger
    }

    /// The driver of one medium: Wi-Fi LAN through Avahi and TCP, BLE on ``bluetoothController``.
    /// - Throws: `NearbyError` `.bluetoothUnavailable` for BLE without a controller.
    package func driver(for kind: MediumKind) throws -> any MediumDriver {
        switch kind {
        case .wifiLAN:
            return WiFiLANMedium(waitForMDNS: waitForMDNS, logger: logger)
        case .ble:
            guard let bluetoothController else {
                throw NearbyError(
                    .bluetoothUnavailable,
                    "no Bluetooth controller: the BLE medium needs an HCI transport (tcp:HOST:PORT, uart:/dev/ttyX[@BAUD] or hci:N) or bluez[:hciN]")
            }
            switch bluetoothController.radio {
            case .userSpace(let transport):
                return BLEMedium(configuration: .init(transport: transport), logger: logger)
            case .bluez:
                return BLEMedium(radio: Self.radio(bluetoothController.radio, logger: logger), logger: logger)
            }
        }
    }

    /// The radio `spec` names: the user-space host on its transport, or BlueZ with channels through the kernel's
    /// L2CAP sockets and advertising, scanning and adapter state through `bluetoothd` on the system bus
    /// (NearbyBlueZ's `BlueZGAP`).
    package static func radio(_ spec: BLERadioSpec, logger: Logger) -> any BLERadio {
        switch spec {
        case .userSpace:
            return spec.makeRadio(logger: logger)
        case .bluez:
            return spec.makeRadio(bluezGAP: BlueZGAP(logger: logger), logger: logger)
        }
    }

    /// The drivers of `mediums`, in order, once each; mediums swift-nearby does not implement are skipped. A medium
    /// whose driver cannot be made is left out and its error returned in `problems`.
    package func drivers(for mediums: [Medium]) -> (drivers: [any MediumDriver], problems: [MediumKind: NearbyError]) {
        var drivers: [any MediumDriver] = []
        var problems: [MediumKind: NearbyError] = [:]
        var seen: Set<MediumKind> = []
        for kind in mediums.compactMap(\.kind) where seen.insert(kind).inserted {
            do {
                drivers.append(try driver(for: kind))
            } catch {
                problems[kind] = (error as? NearbyError) ?? NearbyError(.mediumUnavailable, "\(kind) unavailable", cause: error)
            }
        }
        return (drivers, problems)
    }

    /// The mediums a command line selects: those named, or, when none are, Wi-Fi LAN plus BLE when a controller
    /// is given. Wi-Fi LAN comes first.
    package static func selection(named: Set<MediumKind>, hasBluetoothController: Bool) -> [MediumKind] {
        let wifi = named.isEmpty || named.contains(.wifiLAN)
        let ble = named.contains(.ble) || (named.isEmpty && hasBluetoothController)
        return (wifi ? [.wifiLAN] : []) + (ble ? [.ble] : [])
    }
}
