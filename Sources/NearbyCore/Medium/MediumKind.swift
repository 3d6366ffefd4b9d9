import NearbyWire

/// A radio or network a connection can run over.
public enum MediumKind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Wi-Fi LAN: DNS-SD discovery and TCP connections on the local network.
    case wifiLAN = "wifi-lan"
    /// Bluetooth Low Energy: advertisements and L2CAP connection-oriented channels.
    case ble = "ble"

    /// The name used in the CLI and logs (`wifi-lan`, `ble`).
    public var description: String { rawValue }

    /// The value this medium has in a connection request's `mediums` list.
    public var connectionRequestMedium: ProtoConnectionRequestFrame.Medium {
        switch self {
        case .wifiLAN: .wifiLan
        case .ble: .ble
        }
    }

    /// The largest payload chunk this medium carries in one frame.
    public var maxTransmitPacketSize: Int {
        switch self {
        case .wifiLAN: 65_536
        case .ble: 1_024
        }
    }
}
