/// Hashes of a service ID, as used on the wire.
///
/// A service ID (for example `NearbySharing` for Quick Share) never travels in clear; advertisements carry a
/// prefix of its SHA-256 instead:
/// * 3 bytes (``advertisementHash(serviceID:)``) in Wi-Fi LAN service names and BLE advertisements;
/// * 6 bytes, in uppercase hex, in the Wi-Fi LAN DNS-SD service type (``wifiLanServiceType(serviceID:)``).
package enum ServiceIDHash {
    /// The length of the service-ID hash inside advertisements.
    package static let advertisementHashLength = 3

    /// The number of hash bytes that make up the Wi-Fi LAN service type.
    package static let wifiLanServiceTypeHashLength = 6

    /// The first `count` bytes of SHA-256 of the UTF-8 encoding of `serviceID`.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` unless `count` is in `0...32`.
    package static func sha256Prefix(_ serviceID: String, count: Int) throws -> [UInt8] {
        guard (0...SHA256Digest.byteCount).contains(count) else {
            throw NearbyError(.invalidArgument, "a SHA-256 prefix has 0 to \(SHA256Digest.byteCount) bytes, asked for \(count)")
        }
        return Array(SHA256Digest.hash(utf8: serviceID).prefix(count))
    }

    /// The 3-byte service-ID hash carried by Wi-Fi LAN service names and BLE advertisements.
    ///
    /// `NearbySharing` → `FC 9F 5E`.
    package static func advertisementHash(serviceID: String) -> [UInt8] {
        Array(SHA256Digest.hash(utf8: serviceID).prefix(advertisementHashLength))
    }

    /// The Wi-Fi LAN (DNS-SD) service type for `serviceID`.
    package static func wifiLanServiceType(serviceID: String) -> WifiLanServiceType {
        WifiLanServiceType(serviceID: serviceID)
    }
}

/// The DNS-SD service type a Wi-Fi LAN advertiser registers for a service ID.
///
/// The type is `"_" + uppercase hex(first 6 bytes of SHA-256(service ID)) + "._tcp"` in the `local` domain; for
/// `NearbySharing` it is `_FC9F5ED42C8A._tcp`. mDNS APIs such as Avahi take the form without a trailing dot
/// (``name``); the reference implementation formats it with one (``nameWithTrailingDot``).
package struct WifiLanServiceType: Hashable, Sendable, CustomStringConvertible {
    /// The DNS-SD domain Nearby Connections uses.
    package static let domain = "local"

    /// The service ID this type was derived from.
    package let serviceID: String

    /// The first 6 bytes of SHA-256 of the service ID.
    package let hash: [UInt8]

    /// Derives the service type of `serviceID`.
    package init(serviceID: String) {
        self.serviceID = serviceID
        self.hash = Array(SHA256Digest.hash(utf8: serviceID).prefix(ServiceIDHash.wifiLanServiceTypeHashLength))
    }

    /// The type without a trailing dot, e.g. `_FC9F5ED42C8A._tcp`, as Avahi and most mDNS APIs expect it.
    package var name: String {
        "_" + hash.map(Self.uppercaseHex).joined() + "._tcp"
    }

    /// The type with a trailing dot, e.g. `_FC9F5ED42C8A._tcp.`, as the reference implementation formats it.
    package var nameWithTrailingDot: String { name + "." }

    /// The same as ``name``.
    package var description: String { name }

    private static func uppercaseHex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
