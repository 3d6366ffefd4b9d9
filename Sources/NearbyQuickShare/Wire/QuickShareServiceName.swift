import NearbyCore
import NearbyWire

/// The names Quick Share uses on Nearby Connections: its service ID, strategy and Wi-Fi LAN (mDNS) names.
///
/// Quick Share is Nearby Connections with service ID `NearbySharing` and strategy point-to-point, so the engine's
/// generic Wi-Fi LAN naming already yields exactly what phones look for: the service type
/// `_FC9F5ED42C8A._tcp` (the first 6 bytes of SHA-256 of the service ID, upper-case hex) and the instance name
/// base64url(`0x23 ‖ endpoint ID ‖ FC 9F 5E ‖ 00 00`), with the endpoint info in TXT key `n`. This type pins those
/// facts so a change in the engine's derivation cannot silently break Quick Share.
public enum QuickShareServiceName {
    /// The Nearby Connections service ID of Quick Share.
    public static let serviceID = "NearbySharing"
    /// Quick Share's strategy.
    public static let strategy: Strategy = .pointToPoint
    /// The DNS-SD service type phones browse and advertise.
    public static let serviceType = "_FC9F5ED42C8A._tcp"
    /// The first byte of the instance name: version 1, PCP 3 (point-to-point).
    public static let firstByte: UInt8 = 0x23
    /// The service-ID hash in the instance name (the first 3 bytes of SHA-256 of `NearbySharing`).
    public static let serviceIDHash: [UInt8] = [0xFC, 0x9F, 0x5E]

    /// The 10 bytes of the instance name for `endpointID`.
    /// - Throws: `NearbyError` `.invalidArgument` unless the endpoint ID is 4 printable ASCII characters.
    public static func instanceNameBytes(endpointID: String) throws -> [UInt8] {
        let id = try NearbyWire.EndpointID(endpointID)
        return [firstByte] + id.asciiBytes + serviceIDHash + [0x00, 0x00]
    }

    /// The DNS-SD instance name for `endpointID` (14 characters of URL-safe base64).
    /// - Throws: `NearbyError` `.invalidArgument` unless the endpoint ID is 4 printable ASCII characters.
    public static func instanceName(endpointID: String) throws -> String {
        WebSafeBase64.encode(try instanceNameBytes(endpointID: endpointID))
    }

    /// The endpoint ID in a Quick Share instance name.
    /// - Throws: `NearbyError` `.invalidAdvertisement` when the name is not a Wi-Fi LAN service name of Quick Share
    ///   (another service's hash, another strategy, not base64).
    public static func endpointID(fromInstanceName name: String) throws -> String {
        let info = try WifiLanServiceInfo(serviceName: name)
        guard info.serviceIDHash == serviceIDHash else {
            throw NearbyError(.invalidAdvertisement, "\(name) is not a Quick Share instance name (service hash \(Hex.encode(info.serviceIDHash)))")
        }
        guard info.pcp == strategy.pcp else {
            throw NearbyError(.invalidAdvertisement, "\(name) advertises strategy \(info.pcp), Quick Share uses \(strategy.pcp)")
        }
        return info.endpointID.value
    }

    /// The TXT record value (key `n`) for endpoint info.
    public static func txtValue(for info: QuickShareEndpointInfo) -> String {
        WebSafeBase64.encode(info.bytes)
    }
}
