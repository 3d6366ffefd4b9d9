import NearbyWire

/// Which radio the `--hci` option selects: our user-space host on a controller (`tcp:HOST:PORT`,
/// `uart:/dev/ttyX[@BAUD]`, `hci:N`) or the system's BlueZ on an adapter (`bluez`, `bluez:hciN`).
public enum BLERadioSpec: Sendable, Hashable, CustomStringConvertible {
    /// Our user-space HCI host on the controller at the transport.
    case userSpace(HCITransportSpec)
    /// The kernel's Bluetooth stack and `bluetoothd`, on the adapter named like `hci0`.
    case bluez(adapter: String)

    /// Parses `bluez`, `bluez:hciN`, or a transport string (see `HCITransportSpec`).
    /// - Throws: `NearbyError` `.invalidArgument` naming what is wrong.
    public init(parsing text: String) throws {
        if text == "bluez" {
            self = .bluez(adapter: "hci0")
            return
        }
        if text.hasPrefix("bluez:") {
            let adapter = String(text.dropFirst("bluez:".count))
            guard adapter.hasPrefix("hci"), let index = Int(adapter.dropFirst(3)), index >= 0 else {
                throw NearbyError(.invalidArgument, "Bluetooth radio '\(text)': the BlueZ adapter must be named hciN, e.g. bluez:hci0")
            }
            self = .bluez(adapter: adapter)
            return
        }
        do {
            self = .userSpace(try HCITransportSpec(parsing: text))
        } catch let error as NearbyError {
            throw NearbyError(.invalidArgument, "\(error.message), or bluez[:hciN] for the system's BlueZ")
        }
    }

    /// `bluez:hciN`, or the transport string.
    public var description: String {
        switch self {
        case .userSpace(let transport): transport.description
        case .bluez(let adapter): "bluez:\(adapter)"
        }
    }
}
