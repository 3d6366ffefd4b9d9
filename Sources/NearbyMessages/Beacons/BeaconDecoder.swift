import Foundation

/// Pure decoders of BLE advertising data (the AD structures of an advertising report, without HCI headers) into
/// beacon frames: Eddystone UID, URL, TLM (plain and encrypted) and EID, iBeacon and AltBeacon.
public enum BeaconDecoder {
    /// The 16-bit Eddystone service UUID, 0xFEAA.
    public static let eddystoneServiceUUID: UInt16 = 0xFEAA
    /// Apple's company ID, 0x004C.
    public static let appleCompanyID: UInt16 = 0x004C

    /// One AD structure: its type and data.
    public struct ADStructure: Sendable, Hashable {
        /// The AD type (0x16 service data, 0xFF manufacturer specific, …).
        public var type: UInt8
        /// The bytes after the type.
        public var data: [UInt8]
    }

    /// Splits advertising data into AD structures; stops at a zero length or a structure that overruns the data.
    public static func structures(_ bytes: [UInt8]) -> [ADStructure] {
        var result: [ADStructure] = []
        var offset = 0
        while offset < bytes.count {
            let length = Int(bytes[offset])
            guard length > 0, offset + 1 + length <= bytes.count else { break }
            result.append(ADStructure(type: bytes[offset + 1], data: Array(bytes[offset + 2..<offset + 1 + length])))
            offset += 1 + length
        }
        return result
    }

    /// Every beacon frame in the advertising data (usually zero or one).
    public static func decode(_ advertisingData: [UInt8]) -> [BeaconFrame] {
        structures(advertisingData).compactMap { structure in
            switch structure.type {
            case 0x16: decodeServiceData(structure.data)
            case 0xFF: decodeManufacturerData(structure.data)
            default: nil
            }
        }
    }

    /// Decodes service data (AD type 0x16: UUID little-endian, then the frame) when it is an Eddystone frame.
    public static func decodeServiceData(_ data: [UInt8]) -> BeaconFrame? {
        guard data.count >= 3, UInt16(data[0]) | UInt16(data[1]) << 8 == eddystoneServiceUUID else { return nil }
        return decodeEddystone(Array(data[2...]))
    }

    /// Decodes an Eddystone frame (starting with its frame-type byte).
    public static func decodeEddystone(_ frame: [UInt8]) -> BeaconFrame? {
        guard let frameType = frame.first else { return nil }
        switch frameType {
        case 0x00:
            // 18 bytes, or 20 with the two RFU bytes.
            guard frame.count == 18 || frame.count == 20 else { return nil }
            return .eddystoneUID(
                namespace: Array(frame[2..<12]), instance: Array(frame[12..<18]), txPower: Int(Int8(bitPattern: frame[1])))
        case 0x10:
            guard frame.count >= 3, frame.count <= 20, let url = expandURL(scheme: frame[2], Array(frame[3...])) else {
                return nil
            }
            return .eddystoneURL(url: url, txPower: Int(Int8(bitPattern: frame[1])))
        case 0x20:
            guard frame.count == 14 || frame.count == 18 else { return nil }
            switch frame[1] {
            case 0x00 where frame.count == 14:
                return .eddystoneTLM(EddystoneTelemetry(
                    batteryMillivolts: UInt16(frame[2]) << 8 | UInt16(frame[3]),
                    rawTemperature: Int16(bitPattern: UInt16(frame[4]) << 8 | UInt16(frame[5])),
                    advertisingCount: uint32(frame, 6), uptimeTenths: uint32(frame, 10)))
            case 0x01 where frame.count == 18:
                return .eddystoneEncryptedTLM(
                    ciphertext: Array(frame[2..<14]), salt: UInt16(frame[14]) << 8 | UInt16(frame[15]),
                    mic: UInt16(frame[16]) << 8 | UInt16(frame[17]))
            default:
                return nil
            }
        case 0x30:
            guard frame.count == 10 else { return nil }
            return .eddystoneEID(ephemeralID: Array(frame[2..<10]), txPower: Int(Int8(bitPattern: frame[1])))
        default:
            return nil
        }
    }

    /// Decodes manufacturer-specific data (AD type 0xFF: company ID little-endian, then the rest) when it is an
    /// iBeacon (Apple, `02 15`, 23 bytes) or an AltBeacon (any company, `BE AC`, 24 bytes).
    public static func decodeManufacturerData(_ data: [UInt8]) -> BeaconFrame? {
        guard data.count >= 4 else { return nil }
        let company = UInt16(data[0]) | UInt16(data[1]) << 8
        if company == appleCompanyID, data[2] == 0x02, data[3] == 0x15, data.count == 25 {
            let uuidBytes = Array(data[4..<20])
            let uuid = UUID(uuid: (
                uuidBytes[0], uuidBytes[1], uuidBytes[2], uuidBytes[3], uuidBytes[4], uuidBytes[5], uuidBytes[6],
                uuidBytes[7], uuidBytes[8], uuidBytes[9], uuidBytes[10], uuidBytes[11], uuidBytes[12], uuidBytes[13],
                uuidBytes[14], uuidBytes[15]))
            return .iBeacon(
                uuid: uuid, major: UInt16(data[20]) << 8 | UInt16(data[21]),
                minor: UInt16(data[22]) << 8 | UInt16(data[23]), measuredPower: Int(Int8(bitPattern: data[24])))
        }
        if data[2] == 0xBE, data[3] == 0xAC, data.count == 26 {
            return .altBeacon(
                manufacturer: company, beaconID: Array(data[4..<24]), referenceRSSI: Int(Int8(bitPattern: data[24])),
                reserved: data[25])
        }
        return nil
    }

    /// The URL schemes of Eddystone-URL, by prefix byte.
    public static let urlSchemes = ["http://www.", "https://www.", "http://", "https://"]
    /// The expansions of Eddystone-URL, by code 0x00–0x0d.
    public static let urlExpansions = [
        ".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
        ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov",
    ]

    /// Expands an Eddystone-URL; `nil` for an unknown scheme or a reserved byte (0x0e–0x20, 0x7f–0xff).
    public static func expandURL(scheme: UInt8, _ encoded: [UInt8]) -> String? {
        guard Int(scheme) < urlSchemes.count else { return nil }
        var url = urlSchemes[Int(scheme)]
        for byte in encoded {
            if Int(byte) < urlExpansions.count {
                url += urlExpansions[Int(byte)]
            } else if byte > 0x20, byte < 0x7F {
                url.append(Character(Unicode.Scalar(byte)))
            } else {
                return nil
            }
        }
        return url
    }

    private static func uint32(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
