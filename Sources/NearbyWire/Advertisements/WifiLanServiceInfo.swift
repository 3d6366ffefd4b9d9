/// The Wi-Fi LAN advertisement carried as the DNS-SD service instance name.
///
/// The instance name is the URL-safe base64 (no padding) of these bytes:
///
/// | Offset | Size | Content |
/// |---|---|---|
/// | 0 | 1 | version 1 in bits 7–5, ``PCP`` in bits 4–0 |
/// | 1 | 4 | endpoint ID (ASCII) |
/// | 5 | 3 | service-ID hash (first 3 bytes of SHA-256 of the service ID) |
/// | 8 | 1 | UWB address length N |
/// | 9 | N | UWB address |
/// | 9+N | 1 | extra field: bit 0 = WebRTC connectable |
///
/// ``serviceName`` always writes the UWB length and the extra byte, giving the 10-byte form (14 characters) when
/// there is no UWB address: that is what Android and Quick Share send, and readers require at least 9 bytes.
/// ``init(serviceName:)`` accepts 9 or more bytes: the extra byte is optional and so is a UWB address.
///
/// The endpoint info does not travel in the name; it goes in the TXT record (see ``WifiLanTXTRecord``).
package struct WifiLanServiceInfo: Hashable, Sendable {
    /// The only version this format has (bits 7–5 of the first byte).
    package static let version: UInt8 = 1

    /// The fewest decoded bytes a reader accepts.
    package static let minimumDecodedLength = 9

    /// The length of the bytes ``encodedBytes`` writes when there is no UWB address.
    package static let encodedLengthWithoutUwbAddress = 10

    /// The longest UWB address that keeps the instance name within a 63-byte DNS label.
    package static let maxUwbAddressLength = 37

    /// The endpoint's strategy.
    package let pcp: PCP
    /// The advertising endpoint's ID.
    package let endpointID: EndpointID
    /// The first 3 bytes of SHA-256 of the service ID.
    package let serviceIDHash: [UInt8]
    /// The UWB address, empty when there is none.
    package let uwbAddress: [UInt8]
    /// Whether the endpoint can be reached over WebRTC (extra-field bit 0). `false` when a received name has no
    /// extra byte.
    package let isWebRTCConnectable: Bool

    /// Creates the advertisement from its fields.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` when `serviceIDHash` is not 3 bytes
    ///   or `uwbAddress` is longer than ``maxUwbAddressLength``.
    package init(
        pcp: PCP,
        endpointID: EndpointID,
        serviceIDHash: [UInt8],
        uwbAddress: [UInt8] = [],
        isWebRTCConnectable: Bool = false
    ) throws {
        guard serviceIDHash.count == ServiceIDHash.advertisementHashLength else {
            throw NearbyError(.invalidArgument, "a service-ID hash has \(ServiceIDHash.advertisementHashLength) bytes, got \(serviceIDHash.count)")
        }
        guard uwbAddress.count <= Self.maxUwbAddressLength else {
            throw NearbyError(.invalidArgument, "a UWB address in a Wi-Fi LAN service name has at most \(Self.maxUwbAddressLength) bytes, got \(uwbAddress.count)")
        }
        self.pcp = pcp
        self.endpointID = endpointID
        self.serviceIDHash = serviceIDHash
        self.uwbAddress = uwbAddress
        self.isWebRTCConnectable = isWebRTCConnectable
    }

    /// Creates the advertisement for a service ID, hashing it.
    package init(pcp: PCP, endpointID: EndpointID, serviceID: String, isWebRTCConnectable: Bool = false) {
        self.pcp = pcp
        self.endpointID = endpointID
        self.serviceIDHash = ServiceIDHash.advertisementHash(serviceID: serviceID)
        self.uwbAddress = []
        self.isWebRTCConnectable = isWebRTCConnectable
    }

    /// Decodes a service instance name.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidAdvertisement`` when the name is not URL-safe
    ///   base64, decodes to fewer than 9 bytes, has a version other than 1, a PCP outside 1–3, an endpoint ID that
    ///   is not printable ASCII, or a UWB length running past the end.
    package init(serviceName: String) throws {
        let bytes: [UInt8]
        do {
            bytes = try WebSafeBase64.decode(serviceName)
        } catch let error as NearbyError {
            throw NearbyError(.invalidAdvertisement, "Wi-Fi LAN service name is not URL-safe base64: \(error.message)", cause: error)
        }
        try self.init(decoding: bytes)
    }

    /// Decodes the raw (already base64-decoded) bytes of a service instance name.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidAdvertisement``; see ``init(serviceName:)``.
    package init(decoding bytes: [UInt8]) throws {
        var reader = ByteReader(bytes, context: "Wi-Fi LAN service name", code: .invalidAdvertisement)
        guard bytes.count >= Self.minimumDecodedLength else {
            throw reader.error("expected at least \(Self.minimumDecodedLength) bytes, got \(bytes.count)")
        }
        let versionAndPCP = try reader.readByte("version and PCP")
        let version = versionAndPCP >> 5
        guard version == Self.version else {
            throw reader.error("unsupported version \(version)")
        }
        guard let pcp = PCP(rawValue: versionAndPCP & PCP.bitmask) else {
            throw reader.error("unsupported PCP \(versionAndPCP & PCP.bitmask)")
        }
        let endpointID = try reader.readEndpointID()
        let serviceIDHash = try reader.readBytes(ServiceIDHash.advertisementHashLength, "service-ID hash")
        let uwbLength = try reader.readByte("UWB address length")
        let uwbAddress = try reader.readBytes(Int(uwbLength), "UWB address")
        var isWebRTCConnectable = false
        if reader.remaining > 0 {
            isWebRTCConnectable = try reader.readByte("extra field") & 0x01 != 0
        }
        self.pcp = pcp
        self.endpointID = endpointID
        self.serviceIDHash = serviceIDHash
        self.uwbAddress = uwbAddress
        self.isWebRTCConnectable = isWebRTCConnectable
    }

    /// The raw bytes: 10 of them when there is no UWB address.
    package var encodedBytes: [UInt8] {
        var bytes: [UInt8] = [Self.version << 5 | pcp.rawValue]
        bytes += endpointID.asciiBytes
        bytes += serviceIDHash
        bytes.append(UInt8(uwbAddress.count))
        bytes += uwbAddress
        bytes.append(isWebRTCConnectable ? 0x01 : 0x00)
        return bytes
    }

    /// The DNS-SD service instance name: ``encodedBytes`` in URL-safe base64 without padding.
    ///
    /// PCP 3, endpoint `ABCD`, service `NearbySharing` → `I0FCQ0T8n14AAA`.
    package var serviceName: String {
        WebSafeBase64.encode(encodedBytes)
    }

    /// Whether the advertisement's service-ID hash is that of `serviceID` (discoverers ignore the others).
    package func matches(serviceID: String) -> Bool {
        serviceIDHash == ServiceIDHash.advertisementHash(serviceID: serviceID)
    }
}
