import NearbyBLE
import NearbyWire

/// The Bluetooth controller the BLE medium runs on, named as the CLI's `--hci` option names it.
///
/// swift-nearby can be its own Bluetooth host: it talks HCI to a controller over TCP (a virtual controller such as
/// Bumble's), a serial UART, or the Linux HCI user channel of an adapter that BlueZ has let go of. Or it leaves the
/// adapter to the system's BlueZ (`bluez`, `bluez:hciN`) and uses the kernel's L2CAP sockets (docs/BLE-RADIO.md).
public struct BluetoothController: Sendable, Hashable, CustomStringConvertible {
    /// Which radio the BLE medium uses.
    package let radio: BLERadioSpec

    /// Parses `spec`: `tcp:HOST:PORT`, `uart:/dev/ttyX[@BAUD]`, `hci:N`, `bluez` or `bluez:hciN`. Nothing is opened
    /// yet: the controller is opened when advertising, discovery or a connection first needs it.
    /// - Throws: `NearbyError` `.invalidArgument` naming what is wrong with `spec`.
    public init(_ spec: String) throws {
        radio = try BLERadioSpec(parsing: spec)
    }

    /// The user-space host's controller transport; `nil` for BlueZ.
    package var transport: HCITransportSpec? {
        if case .userSpace(let transport) = radio { return transport }
        return nil
    }

    /// The controller as `tcp:HOST:PORT`, `uart:/dev/ttyX@BAUD`, `hci:N` or `bluez:hciN`.
    public var description: String { radio.description }
}

extension NearbyError.Code {
    /// The Bluetooth controller is missing or cannot be used (no HCI transport, or it cannot be opened).
    public static let bluetoothUnavailable = Self(rawValue: "bluetoothUnavailable")
}
