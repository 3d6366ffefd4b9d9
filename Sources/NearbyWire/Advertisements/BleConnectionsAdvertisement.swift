/// The Connections-level BLE advertisement: who is advertising, carried as the `data` of a
/// ``BleMediumAdvertisement``.
///
/// Regular form (endpoint info 1…131 bytes):
///
/// | Size | Content |
/// |---|---|
/// | 1 | version 1 in bits 7–5, ``PCP`` in bits 4–0 |
/// | 3 | service-ID hash |
/// | 4 | endpoint ID |
/// | 1 | endpoint info length L |
/// | L | endpoint info |
/// | 6 | Bluetooth MAC address (zeros when none) |
/// | 1 | UWB address length N (optional on read) |
/// | N | UWB address |
/// | 1 | extra field: bit 0 = WebRTC connectable (optional on read) |
///
/// Fast form (endpoint info 1…17 bytes), which leaves out the hash, the MAC and the extra field to fit a legacy
/// advertisement: version/PCP (1), endpoint ID (4), length (1), endpoint info (L), then, only when there is a UWB
/// address, its length and bytes.
///
/// Readers, like the reference one, ignore bytes after the last field they know.
package struct BleConnectionsAdvertisement: Hashable, Sendable {
    /// The two layouts.
    package enum Form: Sendable, Hashable {
        /// The full layout, for extended advertisements and GATT characteristics.
        case regular
        /// The compact layout for a legacy (31-byte) advertisement.
        case fast
    }

    /// The only version this format has (bits 7–5 of the first byte).
    package static let version: UInt8 = 1
    /// The longest endpoint info in the regular form.
    package static let maxEndpointInfoLength = 131
    /// The longest endpoint info in the fast form.
    package static let maxFastEndpointInfoLength = 17
    /// The length of a Bluetooth MAC address.
    package static let bluetoothMACAddressLength = 6
    /// The shortest regular advertisement: version/PCP, hash, endpoint ID, length byte and MAC (endpoint info
    /// aside).
    package static let minimumRegularLength = 1 + 3 + 4 + 1 + 6
    /// The shortest fast advertisement: version/PCP, endpoint ID and length byte (endpoint info aside).
    package static let minimumFastLength = 1 + 4 + 1

    /// Which layout this advertisement uses.
    package let form: Form
    /// The endpoint's strategy.
    package let pcp: PCP
    /// The first 3 bytes of SHA-256 of the service ID; empty in the fast form.
    package let serviceIDHash: [UInt8]
    /// The advertising endpoint's ID.
    package let endpointID: EndpointID
    /// The endpoint's opaque name bytes (1…131, or 1…17 in the fast form).
    package let endpointInfo: [UInt8]
    /// The 6-byte Bluetooth MAC address, or `nil` (written as six zero bytes) when none; always `nil` in the fast
    /// form.
    package let bluetoothMACAddress: [UInt8]?
    /// The UWB address, empty when there is none.
    package let uwbAddress: [UInt8]
    /// Whether the endpoint can be reached over WebRTC; always `false` in the fast form.
    package let isWebRTCConnectable: Bool

    private init(
        form: Form, pcp: PCP, serviceIDHash: [UInt8], endpointID: EndpointID, endpointInfo: [UInt8],
        bluetoothMACAddress: [UInt8]?, uwbAddress: [UInt8], isWebRTCConnectable: Bool
    ) {
        self.form = form
        self.pcp = pcp
        self.serviceIDHash = serviceIDHash
        self.endpointID = endpointID
        self.endpointInfo = endpointInfo
        self.bluetoothMACAddress = bluetoothMACAddress
        self.uwbAddress = uwbAddress
        self.isWebRTCConnectable = isWebRTCConnectable
    }

    /// Creates a regular advertisement.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` when `serviceIDHash` is not 3
    ///   bytes, `endpointInfo` is empty or longer than 131 bytes, `bluetoothMACAddress` is not 6 bytes, or
    ///   `uwbAddress` is longer than 255 bytes.
    package static func regular(
        pcp: PCP,
        serviceIDHash: [UInt8],
        endpointID: EndpointID,
        endpointInfo: [UInt8],
        bluetoothMACAddress: [UInt8]? = nil,
        uwbAddress: [UInt8] = [],
        isWebRTCConnectable: Bool = false
    ) throws -> BleConnectionsAdvertisement {
        guard serviceIDHash.count == ServiceIDHash.advertisementHashLength else {
            throw NearbyError(.invalidArgument, "a service-ID hash has \(ServiceIDHash.advertisementHashLength) bytes, got \(serviceIDHash.count)")
        }
        try checkEndpointInfo(endpointInfo, max: maxEndpointInfoLength)
        if let bluetoothMACAddress, bluetoothMACAddress.count != bluetoothMACAddressLength {
            throw NearbyError(.invalidArgument, "a Bluetooth MAC address has \(bluetoothMACAddressLength) bytes, got \(bluetoothMACAddress.count)")
        }
        try checkUwbAddress(uwbAddress)
        let mac = bluetoothMACAddress.flatMap { $0.allSatisfy { $0 == 0 } ? nil : $0 }
        return BleConnectionsAdvertisement(
            form: .regular, pcp: pcp, serviceIDHash: serviceIDHash, endpointID: endpointID,
            endpointInfo: endpointInfo, bluetoothMACAddress: mac, uwbAddress: uwbAddress,
            isWebRTCConnectable: isWebRTCConnectable)
    }

    /// Creates a fast advertisement.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` when `endpointInfo` is empty or
    ///   longer than 17 bytes, or `uwbAddress` is longer than 255 bytes.
    package static func fast(
        pcp: PCP,
        endpointID: EndpointID,
        endpointInfo: [UInt8],
        uwbAddress: [UInt8] = []
    ) throws -> BleConnectionsAdvertisement {
        try checkEndpointInfo(endpointInfo, max: maxFastEndpointInfoLength)
        try checkUwbAddress(uwbAddress)
        return BleConnectionsAdvertisement(
            form: .fast, pcp: pcp, serviceIDHash: [], endpointID: endpointID, endpointInfo: endpointInfo,
            bluetoothMACAddress: nil, uwbAddress: uwbAddress, isWebRTCConnectable: false)
    }

    /// Decodes an advertisement of the given form (the form comes from the enclosing ``BleMediumAdvertisement``).
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidAdvertisement`` when the bytes are shorter
    ///   than the form's minimum, the version is not 1, the PCP is not 1–3, the endpoint ID is not printable ASCII,
    ///   the endpoint info is empty, too long for the form or runs past the end, or a UWB address runs past the
    ///   end.
    package init(decoding bytes: [UInt8], form: Form) throws {
        let context = form == .fast ? "fast BLE advertisement" : "BLE advertisement"
        var reader = ByteReader(bytes, context: context, code: .invalidAdvertisement)
        let minimumLength = form == .fast ? Self.minimumFastLength : Self.minimumRegularLength
        guard bytes.count >= minimumLength else {
            throw reader.error("expected at least \(minimumLength) bytes, got \(bytes.count)")
        }
        let versionAndPCP = try reader.readByte("version and PCP")
        let version = versionAndPCP >> 5
        guard version == Self.version else {
            throw reader.error("unsupported version \(version)")
        }
        guard let pcp = PCP(rawValue: versionAndPCP & PCP.bitmask) else {
            throw reader.error("unsupported PCP \(versionAndPCP & PCP.bitmask)")
        }
        let serviceIDHash: [UInt8] =
            if form == .regular {
                try reader.readBytes(ServiceIDHash.advertisementHashLength, "service-ID hash")
            } else {
                []
            }
        let endpointID = try reader.readEndpointID()
        let endpointInfoLength = try Int(reader.readByte("endpoint info length"))
        let maxLength = form == .fast ? Self.maxFastEndpointInfoLength : Self.maxEndpointInfoLength
        guard (1...maxLength).contains(endpointInfoLength) else {
            throw reader.error("endpoint info length must be 1…\(maxLength), got \(endpointInfoLength)")
        }
        let endpointInfo = try reader.readBytes(endpointInfoLength, "endpoint info")

        var bluetoothMACAddress: [UInt8]?
        if form == .regular {
            let mac = try reader.readBytes(Self.bluetoothMACAddressLength, "Bluetooth MAC address")
            bluetoothMACAddress = mac.allSatisfy { $0 == 0 } ? nil : mac
        }

        var uwbAddress: [UInt8] = []
        var isWebRTCConnectable = false
        if reader.remaining > 0 {
            let uwbLength = try Int(reader.readByte("UWB address length"))
            uwbAddress = try reader.readBytes(uwbLength, "UWB address")
            if form == .regular, reader.remaining > 0 {
                isWebRTCConnectable = try reader.readByte("extra field") & 0x01 != 0
            }
        }

        self.init(
            form: form, pcp: pcp, serviceIDHash: serviceIDHash, endpointID: endpointID,
            endpointInfo: endpointInfo, bluetoothMACAddress: bluetoothMACAddress, uwbAddress: uwbAddress,
            isWebRTCConnectable: isWebRTCConnectable)
    }

    /// The advertisement's bytes in its ``form``.
    ///
    /// The regular form always ends with the UWB length (0 when there is no address) and the extra byte; the fast
    /// form writes UWB fields only when there is a UWB address.
    package var encodedBytes: [UInt8] {
        var bytes: [UInt8] = [Self.version << 5 | pcp.rawValue]
        switch form {
        case .regular:
            bytes += serviceIDHash
            bytes += endpointID.asciiBytes
            bytes.append(UInt8(endpointInfo.count))
            bytes += endpointInfo
            bytes += bluetoothMACAddress ?? [UInt8](repeating: 0, count: Self.bluetoothMACAddressLength)
            bytes.append(UInt8(uwbAddress.count))
            bytes += uwbAddress
            bytes.append(isWebRTCConnectable ? 0x01 : 0x00)
        case .fast:
            bytes += endpointID.asciiBytes
            bytes.append(UInt8(endpointInfo.count))
            bytes += endpointInfo
            if !uwbAddress.isEmpty {
                bytes.append(UInt8(uwbAddress.count))
                bytes += uwbAddress
            }
        }
        return bytes
    }

    private static func checkEndpointInfo(_ endpointInfo: [UInt8], max: Int) throws {
        guard (1...max).contains(endpointInfo.count) else {
            throw NearbyError(.invalidArgument, "endpoint info in this BLE advertisement has 1 to \(max) bytes, got \(endpointInfo.count)")
        }
    }

    private static func checkUwbAddress(_ uwbAddress: [UInt8]) throws {
        guard uwbAddress.count <= Int(UInt8.max) else {
            throw NearbyError(.invalidArgument, "a UWB address has at most 255 bytes, got \(uwbAddress.count)")
        }
    }
}
