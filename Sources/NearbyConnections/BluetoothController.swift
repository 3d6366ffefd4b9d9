import NearbyBLE
import NearbyWire

/// The Bluetooth controller the BLE medium runs on, named as the CLI's `--hci` option names it.
///
/// swift-nearby is its own Bluetooth host: it talks HCI to a controller over TCP (a virtual controller such as
/// Bumble's), a serial UART, or the Linux HCI user channel of an adapter that BlueZ has let go of.
public struct BluetoothController: Sendable, Hashable, CustomStringConvertible {
    /// Where the controller is, for the BLE medium.
    package let transport: HCITransportSpec

    /// Parses `spec`: `tcp:HOST:PORT`, `uart:/dev/ttyX[@BAUD]` or `hci:N`. Nothing is opened yet: the controller is
    /// opened when advertising, discovery or a connection first needs it.
    /// - Throws: `NearbyError` `.invalidArgument` naming what is wrong with `spec`.
    public init(_ spec: String) throws {
        transport = try HCITransportSpec(parsing: spec)
    }

    /// The controller as `tcp:HOST:PORT`, `uart:/dev/ttyX@BAUD` or `hci:N`.
    public var description: String { transport.description }
}

extension NearbyError.Code {
    /// The Bluetooth controller is missing or cannot be used (no HCI transport, or it cannot be opened).
    public static let bluetoothUnavailable = Self(rawValue: "bluetoothUnavailable")
}
