import NearbyWire

/// The "fast initiation" BLE beacon: service data of the 16-bit service UUID 0xFE2C that a device broadcasts while
/// it shares, so that Android phones nearby notice it (they then show "a device nearby is sharing" and start
/// advertising themselves on Wi-Fi LAN).
///
/// The service data has 24 bytes:
///
/// | Offset | Size | Content |
/// |---|---|---|
/// | 0 | 3 | model ID `FC 12 8E` |
/// | 3 | 1 | version (bits 7–5; 0 = v1), type (bits 4–2; 0 notify, 1 silent), UWB supported (bit 1), sender certificate supported (bit 0) |
/// | 4 | 1 | adjusted TX power (signed) |
/// | 5 | 1 | UWB metadata |
/// | 6 | 8 | UWB address |
/// | 14 | 1 | salt |
/// | 15 | 8 | secret ID hash |
/// | 23 | 1 | flags: require BT advertising (bit 7), self-only advertising (bit 6) |
///
/// Reports from projects tested against Samsung phones say byte 3 must be 0 and the hash must not be all zeros;
/// ``sharing(type:using:)`` writes such a beacon.
public struct QuickShareFastInitBeacon: Sendable, Hashable {
    /// The 16-bit service UUID the data is advertised under.
    public static let serviceUUID: UInt16 = 0xFE2C
    /// The model ID the data starts with.
    public static let modelID: [UInt8] = [0xFC, 0x12, 0x8E]
    /// The length of the service data.
    public static let length = 24

    /// Whether the receiving phone shows a notification.
    public enum Kind: UInt8, Sendable, Hashable {
        /// Phones notify their user that a device nearby is sharing.
        case notify = 0
        /// Phones become visible without a notification.
        case silent = 1
    }

    /// The version (3 bits; 0 is v1).
    public var version: UInt8
    /// Notify or silent (3 bits on the wire).
    public var typeValue: UInt8
    /// Whether UWB is supported.
    public var uwbSupported: Bool
    /// Whether sender certificates are supported.
    public var senderCertificateSupported: Bool
    /// The adjusted TX power, signed.
    public var adjustedTxPower: Int8
    /// One byte of UWB metadata.
    public var uwbMetadata: UInt8
    /// The 8-byte UWB address.
    public var uwbAddress: [UInt8]
    /// One byte of salt.
    public var salt: UInt8
    /// The 8-byte secret ID hash.
    public var secretIDHash: [UInt8]
    /// "Require BT advertising".
    public var requireBluetoothAdvertising: Bool
    /// "Self-only advertising".
    public var selfOnlyAdvertising: Bool

    /// Creates a beacon from its fields.
    /// - Throws: `NearbyError` `.invalidArgument` for a UWB address or hash that is not 8 bytes, or a version or
    ///   type over 3 bits.
    public init(
        version: UInt8 = 0, typeValue: UInt8, uwbSupported: Bool = false, senderCertificateSupported: Bool = false,
        adjustedTxPower: Int8, uwbMetadata: UInt8 = 0, uwbAddress: [UInt8] = Array(repeating: 0, count: 8),
        salt: UInt8, secretIDHash: [UInt8], requireBluetoothAdvertising: Bool = false, selfOnlyAdvertising: Bool = false
    ) throws(NearbyError) {
        guard version <= 7, typeValue <= 7 else {
            throw NearbyError(.invalidArgument, "the beacon's version and type have 3 bits each")
        }
        guard uwbAddress.count == 8, secretIDHash.count == 8 else {
            throw NearbyError(.invalidArgument, "the beacon's UWB address and secret ID hash have 8 bytes each")
        }
        self.version = version
        self.typeValue = typeValue
        self.uwbSupported = uwbSupported
        self.senderCertificateSupported = senderCertificateSupported
        self.adjustedTxPower = adjustedTxPower
        self.uwbMetadata = uwbMetadata
        self.uwbAddress = uwbAddress
        self.salt = salt
        self.secretIDHash = secretIDHash
        self.requireBluetoothAdvertising = requireBluetoothAdvertising
        self.selfOnlyAdvertising = selfOnlyAdvertising
    }

    /// A v1 beacon of `type` with a random salt and a random, non-zero secret ID hash, no UWB, no certificates
    /// (byte 3 is 0 for `.notify`), and TX power byte 0x42, the value the open-source desktop senders use.
    public static func sharing(type: Kind, using generator: inout some RandomNumberGenerator) -> QuickShareFastInitBeacon {
        var hash = (0..<8).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        if hash.allSatisfy({ $0 == 0 }) { hash[0] = 1 }
        return try! QuickShareFastInitBeacon(
            typeValue: type.rawValue, adjustedTxPower: 0x42, salt: UInt8.random(in: .min ... .max, using: &generator),
            secretIDHash: hash)
    }

    /// ``sharing(type:using:)`` with the system's random numbers.
    public static func sharing(type: Kind) -> QuickShareFastInitBeacon {
        var generator = SystemRandomNumberGenerator()
        return sharing(type: type, using: &generator)
    }

    /// Decodes service data.
    /// - Throws: `NearbyError` `.invalidAdvertisement` for anything but 24 bytes starting with the model ID.
    public init(decoding bytes: some Collection<UInt8>) throws(NearbyError) {
        var reader = ByteReader(bytes, context: "Quick Share fast-init beacon", code: .invalidAdvertisement)
        guard reader.remaining == Self.length else {
            throw reader.error("expected \(Self.length) bytes, got \(reader.remaining)")
        }
        guard try reader.readBytes(3, "model ID") == Self.modelID else { throw reader.error("not the Quick Share model ID") }
        let metadata = try reader.readByte("metadata")
        version = metadata >> 5
        typeValue = (metadata >> 2) & 0b111
        uwbSupported = metadata & 0b10 != 0
        senderCertificateSupported = metadata & 0b1 != 0
        adjustedTxPower = Int8(bitPattern: try reader.readByte("TX power"))
        uwbMetadata = try reader.readByte("UWB metadata")
        uwbAddress = try reader.readBytes(8, "UWB address")
        salt = try reader.readByte("salt")
        secretIDHash = try reader.readBytes(8, "secret ID hash")
        let flags = try reader.readByte("flags")
        requireBluetoothAdvertising = flags & 0x80 != 0
        selfOnlyAdvertising = flags & 0x40 != 0
    }

    /// The 24 bytes of service data.
    public var bytes: [UInt8] {
        var bytes = Self.modelID
        bytes.append(
            version << 5 | typeValue << 2 | (uwbSupported ? 0b10 : 0) | (senderCertificateSupported ? 0b1 : 0))
        bytes.append(UInt8(bitPattern: adjustedTxPower))
        bytes.append(uwbMetadata)
        bytes += uwbAddress
        bytes.append(salt)
        bytes += secretIDHash
        bytes.append((requireBluetoothAdvertising ? 0x80 : 0) | (selfOnlyAdvertising ? 0x40 : 0))
        return bytes
    }
}
