/// The medium-level BLE advertisement, which wraps a ``BleConnectionsAdvertisement`` as its ``data``.
///
/// Byte 0 packs the version (bits 7–5), the socket version (bits 4–2), the fast flag (bit 1) and the "second
/// profile" flag (bit 0). Then:
///
/// * Regular (at most 512 bytes, the GATT characteristic limit): service-ID hash (3), data length (`UInt32`
///   big-endian), data, device token (2), then an optional extra-fields block: a mask byte, followed by a
///   big-endian `UInt16` PSM when bit `0x01` is set and by a 1-byte length plus that many bytes of
///   RX-instant-connection data when bit `0x02` is set.
/// * Fast (at most 27 bytes, what a legacy advertisement leaves for service data): data length (1 byte), data,
///   device token (2).
///
/// Readers follow the reference reader: the device token is read only when two bytes remain after the data, any
/// byte left after that is an extra-fields mask (in either form), mask bits other than `0x01` and `0x02` are
/// ignored, and so are bytes after the last known field. Inputs longer than 512 bytes are rejected.
package struct BleMediumAdvertisement: Hashable, Sendable {
    /// The advertisement format version (bits 7–5 of byte 0).
    package enum Version: UInt8, Sendable, Hashable, CaseIterable {
        /// Version 1, accepted on read.
        case v1 = 1
        /// Version 2, the one current implementations write.
        case v2 = 2
    }

    /// The BLE socket protocol version (bits 4–2 of byte 0).
    package enum SocketVersion: UInt8, Sendable, Hashable, CaseIterable {
        /// Socket version 1, accepted on read.
        case v1 = 1
        /// Socket version 2, the one current implementations write.
        case v2 = 2
    }

    /// The longest regular advertisement in bytes (a GATT characteristic value), and the longest input the
    /// decoder accepts.
    package static let maxLength = 512
    /// The longest fast advertisement in bytes.
    package static let maxFastLength = 27
    /// The length of the device token.
    package static let deviceTokenLength = 2

    private static let fastFlag: UInt8 = 0x02
    private static let secondProfileFlag: UInt8 = 0x01
    private static let psmMaskBit: UInt8 = 0x01
    private static let rxInstantConnectionMaskBit: UInt8 = 0x02

    /// The format version.
    package let version: Version
    /// The socket protocol version.
    package let socketVersion: SocketVersion
    /// Whether this is the fast form (no service-ID hash, 1-byte data length).
    package let isFast: Bool
    /// The "second profile" flag (bit 0 of byte 0).
    package let isSecondProfile: Bool
    /// The first 3 bytes of SHA-256 of the service ID; empty in the fast form.
    package let serviceIDHash: [UInt8]
    /// The wrapped bytes, normally a ``BleConnectionsAdvertisement`` of the same form.
    package let data: [UInt8]
    /// The 2-byte device token (see ``BleDeviceToken``), or empty when a received advertisement had none.
    package let deviceToken: [UInt8]
    /// The L2CAP PSM from the extra fields, or `nil` when absent.
    package let psm: UInt16?
    /// The RX-instant-connection data from the extra fields, or `nil` when absent.
    package let rxInstantConnectionData: [UInt8]?

    private init(
        version: Version, socketVersion: SocketVersion, isFast: Bool, isSecondProfile: Bool,
        serviceIDHash: [UInt8], data: [UInt8], deviceToken: [UInt8], psm: UInt16?,
        rxInstantConnectionData: [UInt8]?
    ) {
        self.version = version
        self.socketVersion = socketVersion
        self.isFast = isFast
        self.isSecondProfile = isSecondProfile
        self.serviceIDHash = serviceIDHash
        self.data = data
        self.deviceToken = deviceToken
        self.psm = psm
        self.rxInstantConnectionData = rxInstantConnectionData
    }

    /// Creates a regular advertisement.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` when `serviceIDHash` is not 3
    ///   bytes, `deviceToken` is not 2 bytes, `rxInstantConnectionData` is longer than 255 bytes, or the encoded
    ///   advertisement would exceed ``maxLength``.
    package static func regular(
        version: Version = .v2,
        socketVersion: SocketVersion = .v2,
        serviceIDHash: [UInt8],
        data: [UInt8],
        deviceToken: [UInt8],
        psm: UInt16? = nil,
        rxInstantConnectionData: [UInt8]? = nil,
        isSecondProfile: Bool = false
    ) throws -> BleMediumAdvertisement {
        guard serviceIDHash.count == ServiceIDHash.advertisementHashLength else {
            throw NearbyError(.invalidArgument, "a service-ID hash has \(ServiceIDHash.advertisementHashLength) bytes, got \(serviceIDHash.count)")
        }
        try checkDeviceToken(deviceToken)
        if let rxInstantConnectionData, rxInstantConnectionData.count > Int(UInt8.max) {
            throw NearbyError(.invalidArgument, "RX-instant-connection data has at most 255 bytes, got \(rxInstantConnectionData.count)")
        }
        let advertisement = BleMediumAdvertisement(
            version: version, socketVersion: socketVersion, isFast: false, isSecondProfile: isSecondProfile,
            serviceIDHash: serviceIDHash, data: data, deviceToken: deviceToken, psm: psm,
            rxInstantConnectionData: rxInstantConnectionData)
        try advertisement.checkLength()
        return advertisement
    }

    /// Creates a fast advertisement.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidArgument`` when `deviceToken` is not 2 bytes
    ///   or the encoded advertisement would exceed ``maxFastLength`` bytes (so `data` has at most 23 bytes).
    package static func fast(
        version: Version = .v2,
        socketVersion: SocketVersion = .v2,
        data: [UInt8],
        deviceToken: [UInt8],
        isSecondProfile: Bool = false
    ) throws -> BleMediumAdvertisement {
        try checkDeviceToken(deviceToken)
        let advertisement = BleMediumAdvertisement(
            version: version, socketVersion: socketVersion, isFast: true, isSecondProfile: isSecondProfile,
            serviceIDHash: [], data: data, deviceToken: deviceToken, psm: nil, rxInstantConnectionData: nil)
        try advertisement.checkLength()
        return advertisement
    }

    /// Decodes a medium advertisement of either form (byte 0 says which).
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/invalidAdvertisement`` when the input is empty or
    ///   longer than ``maxLength``, the version or socket version is not 1 or 2, or the hash, data length, data,
    ///   PSM or RX-instant-connection block runs past the end.
    package init(decoding bytes: [UInt8]) throws {
        var reader = ByteReader(bytes, context: "BLE medium advertisement", code: .invalidAdvertisement)
        guard bytes.count <= Self.maxLength else {
            throw reader.error("expected at most \(Self.maxLength) bytes, got \(bytes.count)")
        }
        let header = try reader.readByte("version byte")
        guard let version = Version(rawValue: header >> 5) else {
            throw reader.error("unsupported version \(header >> 5)")
        }
        guard let socketVersion = SocketVersion(rawValue: header >> 2 & 0x07) else {
            throw reader.error("unsupported socket version \(header >> 2 & 0x07)")
        }
        let isFast = header & Self.fastFlag != 0
        let isSecondProfile = header & Self.secondProfileFlag != 0

        let serviceIDHash: [UInt8]
        let dataLength: Int
        if isFast {
            serviceIDHash = []
            dataLength = try Int(reader.readByte("data length"))
        } else {
            serviceIDHash = try reader.readBytes(ServiceIDHash.advertisementHashLength, "service-ID hash")
            dataLength = try Int(reader.readUInt32BigEndian("data length"))
        }
        let data = try reader.readBytes(dataLength, "data")

        var deviceToken: [UInt8] = []
        if reader.remaining >= Self.deviceTokenLength {
            deviceToken = try reader.readBytes(Self.deviceTokenLength, "device token")
        }

        var psm: UInt16?
        var rxInstantConnectionData: [UInt8]?
        if reader.remaining > 0 {
            let mask = try reader.readByte("extra-fields mask")
            if mask & Self.psmMaskBit != 0 {
                psm = try reader.readUInt16BigEndian("PSM")
            }
            if mask & Self.rxInstantConnectionMaskBit != 0 {
                let length = try Int(reader.readByte("RX-instant-connection length"))
                rxInstantConnectionData = try reader.readBytes(length, "RX-instant-connection data")
            }
        }

        self.init(
            version: version, socketVersion: socketVersion, isFast: isFast, isSecondProfile: isSecondProfile,
            serviceIDHash: serviceIDHash, data: data, deviceToken: deviceToken, psm: psm,
            rxInstantConnectionData: rxInstantConnectionData)
    }

    /// The advertisement's bytes, including the extra-fields block when there is a PSM or RX-instant-connection
    /// data.
    package var encodedBytes: [UInt8] {
        var header = version.rawValue << 5 | socketVersion.rawValue << 2
        if isFast { header |= Self.fastFlag }
        if isSecondProfile { header |= Self.secondProfileFlag }
        var bytes: [UInt8] = [header]
        if isFast {
            bytes.append(UInt8(truncatingIfNeeded: data.count))
        } else {
            bytes += serviceIDHash
            let length = UInt32(truncatingIfNeeded: data.count)
            bytes += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
        }
        bytes += data
        bytes += deviceToken
        if psm != nil || rxInstantConnectionData != nil {
            var mask: UInt8 = 0
            if psm != nil { mask |= Self.psmMaskBit }
            if rxInstantConnectionData != nil { mask |= Self.rxInstantConnectionMaskBit }
            bytes.append(mask)
            if let psm {
                bytes += [UInt8(psm >> 8), UInt8(psm & 0xFF)]
            }
            if let rxInstantConnectionData {
                bytes.append(UInt8(rxInstantConnectionData.count))
                bytes += rxInstantConnectionData
            }
        }
        return bytes
    }

    private var encodedLength: Int {
        let fixed = isFast ? 1 + 1 : 1 + ServiceIDHash.advertisementHashLength + 4
        var extra = 0
        if psm != nil || rxInstantConnectionData != nil {
            extra = 1 + (psm == nil ? 0 : 2) + (rxInstantConnectionData.map { 1 + $0.count } ?? 0)
        }
        return fixed + data.count + deviceToken.count + extra
    }

    private func checkLength() throws {
        let max = isFast ? Self.maxFastLength : Self.maxLength
        guard encodedLength <= max else {
            throw NearbyError(.invalidArgument, "this BLE medium advertisement would take \(encodedLength) bytes, at most \(max) allowed")
        }
    }

    private static func checkDeviceToken(_ deviceToken: [UInt8]) throws {
        guard deviceToken.count == deviceTokenLength else {
            throw NearbyError(.invalidArgument, "a device token has \(deviceTokenLength) bytes, got \(deviceToken.count)")
        }
    }
}
