import NearbyWire

/// The endpoint info a Quick Share device advertises (TXT key `n` on Wi-Fi LAN) and sends in its connection
/// request: who it is, as the share sheet shows it.
///
/// | Offset | Size | Content |
/// |---|---|---|
/// | 0 | 1 | version (bits 7–5), 1 = no visible name (bit 4), device type (bits 3–1), reserved (bit 0) |
/// | 1 | 2 | salt |
/// | 3 | 14 | encrypted metadata key |
/// | 17 | 1 | name length N (only with a visible name; 1–255) |
/// | 18 | N | the device name, UTF-8 |
/// | … | | TLV records: type (1 byte), length (1 byte), value — 1 QR code data, 2 vendor ID (1 byte; 1 = Samsung), 3 capabilities |
///
/// Without Google-account certificates the salt and key are random: peers cannot decrypt them and show the plain
/// name instead. Google's devices write version 0 and read versions 0 and 1.
public struct QuickShareEndpointInfo: Sendable, Hashable {
    /// The bytes before the optional name: the first byte, the salt and the encrypted metadata key.
    public static let minimumLength = 17
    /// The salt's length.
    public static let saltLength = 2
    /// The encrypted metadata key's length.
    public static let metadataKeyLength = 14
    /// The highest version a reader accepts.
    public static let maxVersion: UInt8 = 1

    /// One TLV record after the name.
    public struct Record: Sendable, Hashable {
        /// The record type: 1 QR code data, 2 vendor ID, 3 capabilities; others are kept as they are.
        public var type: UInt8
        /// The value, at most 255 bytes.
        public var value: [UInt8]

        /// Creates a record.
        public init(type: UInt8, value: [UInt8]) {
            self.type = type
            self.value = value
        }

        /// The QR code record type.
        public static let qrCodeType: UInt8 = 1
        /// The vendor ID record type.
        public static let vendorIDType: UInt8 = 2
        /// The capabilities record type.
        public static let capabilitiesType: UInt8 = 3
    }

    /// The format version (0 or 1; Google's devices write 0).
    public var version: UInt8
    /// The kind of device.
    public var deviceType: QuickShareDeviceType
    /// The 2-byte salt.
    public var salt: [UInt8]
    /// The 14-byte encrypted metadata key.
    public var encryptedMetadataKey: [UInt8]
    /// The device name shown to everyone, or `nil` for a hidden (contacts-only) device.
    public var deviceName: String?
    /// The TLV records after the name, in order.
    public var records: [Record]

    /// Creates endpoint info from its fields.
    /// - Throws: `NearbyError` `.invalidArgument` for a salt or key of the wrong length, a version above 7, an
    ///   empty name or one over 255 UTF-8 bytes, a record over 255 bytes, or a result over 131 bytes (the most an
    ///   advertisement carries).
    public init(
        version: UInt8 = 0, deviceType: QuickShareDeviceType, salt: [UInt8], encryptedMetadataKey: [UInt8],
        deviceName: String?, records: [Record] = []
    ) throws(NearbyError) {
        guard salt.count == Self.saltLength else {
            throw NearbyError(.invalidArgument, "a Quick Share salt has \(Self.saltLength) bytes, got \(salt.count)")
        }
        guard encryptedMetadataKey.count == Self.metadataKeyLength else {
            throw NearbyError(
                .invalidArgument,
                "a Quick Share encrypted metadata key has \(Self.metadataKeyLength) bytes, got \(encryptedMetadataKey.count)")
        }
        guard version <= 7 else { throw NearbyError(.invalidArgument, "the endpoint info version has 3 bits, got \(version)") }
        if let deviceName {
            guard (1...255).contains(deviceName.utf8.count) else {
                throw NearbyError(.invalidArgument, "a Quick Share device name has 1 to 255 UTF-8 bytes, got \(deviceName.utf8.count)")
            }
        }
        for record in records where record.value.count > 255 {
            throw NearbyError(.invalidArgument, "a TLV record holds at most 255 bytes, got \(record.value.count)")
        }
        self.version = version
        self.deviceType = deviceType
        self.salt = salt
        self.encryptedMetadataKey = encryptedMetadataKey
        self.deviceName = deviceName
        self.records = records
        let length = bytes.count
        guard length <= WifiLanTXTRecord.maxEndpointInfoLength else {
            throw NearbyError(
                .invalidArgument,
                "Quick Share endpoint info has at most \(WifiLanTXTRecord.maxEndpointInfoLength) bytes, got \(length) (shorten the device name)")
        }
    }

    /// Endpoint info for a device visible to everyone under `name`, with a random salt and key (no certificates).
    /// A name too long for an advertisement is cut at a character boundary.
    public static func visible(name: String, deviceType: QuickShareDeviceType) -> QuickShareEndpointInfo {
        var generator = SystemRandomNumberGenerator()
        return visible(name: name, deviceType: deviceType, using: &generator)
    }

    /// ``visible(name:deviceType:)`` with the salt and key drawn from `generator`.
    public static func visible(
        name: String, deviceType: QuickShareDeviceType, using generator: inout some RandomNumberGenerator
    ) -> QuickShareEndpointInfo {
        let salt = (0..<saltLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let key = (0..<metadataKeyLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        // 131 bytes in all: 17 fixed, 1 length, 113 of name.
        let maxNameBytes = WifiLanTXTRecord.maxEndpointInfoLength - minimumLength - 1
        var trimmed = ""
        var bytes = 0
        for character in name {
            let size = String(character).utf8.count
            if bytes + size > maxNameBytes { break }
            trimmed.append(character)
            bytes += size
        }
        if trimmed.isEmpty { trimmed = "Linux" }
        // Every argument is valid by construction.
        return try! QuickShareEndpointInfo(
            deviceType: deviceType, salt: salt, encryptedMetadataKey: key, deviceName: trimmed)
    }

    /// Decodes endpoint info as Google's parser does: the first byte, salt and key, the name when the visibility bit
    /// says there is one, then TLV records until fewer than 2 bytes are left.
    /// - Throws: `NearbyError` `.invalidAdvertisement` for fewer than 17 bytes, a version above 1, a visible name
    ///   of length 0, running past the end, or not UTF-8, and a TLV record running past the end.
    public init(decoding bytes: some Collection<UInt8>) throws(NearbyError) {
        var reader = ByteReader(bytes, context: "Quick Share endpoint info", code: .invalidAdvertisement)
        guard reader.remaining >= Self.minimumLength else {
            throw reader.error("expected at least \(Self.minimumLength) bytes, got \(reader.remaining)")
        }
        let first = try reader.readByte("first byte")
        let version = first >> 5
        guard version <= Self.maxVersion else { throw reader.error("unsupported version \(version)") }
        let hasName = (first >> 4) & 1 == 0
        let salt = try reader.readBytes(Self.saltLength, "salt")
        let key = try reader.readBytes(Self.metadataKeyLength, "encrypted metadata key")
        var name: String?
        if hasName {
            let length = Int(try reader.readByte("name length"))
            guard length > 0 else { throw reader.error("a visible name has length 0") }
            let raw = try reader.readBytes(length, "device name")
            guard let text = String(validating: raw, as: UTF8.self) else {
                throw reader.error("the device name is not UTF-8")
            }
            name = text
        }
        var records: [Record] = []
        while reader.remaining >= 2 {
            let type = try reader.readByte("record type")
            let length = Int(try reader.readByte("record length"))
            records.append(Record(type: type, value: try reader.readBytes(length, "record \(type) value")))
        }
        self.version = version
        self.deviceType = QuickShareDeviceType(wireValue: first >> 1)
        self.salt = salt
        self.encryptedMetadataKey = key
        self.deviceName = name
        self.records = records
    }

    /// The encoded bytes.
    public var bytes: [UInt8] {
        var bytes: [UInt8] = [(version & 0b111) << 5 | (deviceName == nil ? 1 : 0) << 4 | deviceType.rawValue << 1]
        bytes += salt
        bytes += encryptedMetadataKey
        if let deviceName {
            bytes.append(UInt8(deviceName.utf8.count))
            bytes += Array(deviceName.utf8)
        }
        for record in records {
            bytes += [record.type, UInt8(record.value.count)] + record.value
        }
        return bytes
    }

    /// The vendor ID record's value (1 = Samsung), if there is one.
    public var vendorID: UInt8? {
        records.first { $0.type == Record.vendorIDType && $0.value.count == 1 }?.value.first
    }
}
