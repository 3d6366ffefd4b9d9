import Foundation

/// A decoded BLE beacon frame.
public enum BeaconFrame: Sendable, Hashable {
    /// Eddystone-UID: a 10-byte namespace and a 6-byte instance; `txPower` is the power at 0 m in dBm.
    case eddystoneUID(namespace: [UInt8], instance: [UInt8], txPower: Int)
    /// Eddystone-URL: the expanded URL; `txPower` is the power at 0 m in dBm.
    case eddystoneURL(url: String, txPower: Int)
    /// Eddystone-TLM, plain (version 0).
    case eddystoneTLM(EddystoneTelemetry)
    /// Eddystone-TLM, encrypted (version 1): 12 bytes of ciphertext, a 16-bit salt and a 16-bit MIC (big-endian).
    case eddystoneEncryptedTLM(ciphertext: [UInt8], salt: UInt16, mic: UInt16)
    /// Eddystone-EID: the 8-byte ephemeral ID; `txPower` is the power at 0 m in dBm.
    case eddystoneEID(ephemeralID: [UInt8], txPower: Int)
    /// iBeacon: proximity UUID, major, minor and the measured RSSI at 1 m.
    case iBeacon(uuid: UUID, major: UInt16, minor: UInt16, measuredPower: Int)
    /// AltBeacon: the manufacturer (company ID), 20-byte beacon ID, RSSI at 1 m and the reserved byte.
    case altBeacon(manufacturer: UInt16, beaconID: [UInt8], referenceRSSI: Int, reserved: UInt8)

    /// The contract's name: `eddystone-uid`, `eddystone-url`, `eddystone-tlm`, `eddystone-eid`, `ibeacon`, `altbeacon`.
    public var kind: String {
        switch self {
        case .eddystoneUID: "eddystone-uid"
        case .eddystoneURL: "eddystone-url"
        case .eddystoneTLM, .eddystoneEncryptedTLM: "eddystone-tlm"
        case .eddystoneEID: "eddystone-eid"
        case .iBeacon: "ibeacon"
        case .altBeacon: "altbeacon"
        }
    }

    /// The RSSI expected at 1 m, for distance estimates: Eddystone's 0 m power − 41 dB, iBeacon's and AltBeacon's
    /// own 1 m value; `nil` for frames without one (TLM).
    public var referenceRSSIAt1m: Int? {
        switch self {
        case .eddystoneUID(_, _, let tx), .eddystoneURL(_, let tx), .eddystoneEID(_, let tx): tx - 41
        case .iBeacon(_, _, _, let power): power
        case .altBeacon(_, _, let power, _): power
        case .eddystoneTLM, .eddystoneEncryptedTLM: nil
        }
    }

    /// The message this frame is delivered as: namespace ``Message/reservedNamespace``, a type of
    /// ``BeaconMessageType`` and the beacon's ID as content.
    public var message: Message {
        let (type, content): (String, [UInt8]) =
            switch self {
            case .eddystoneUID(let namespace, let instance, _): (BeaconMessageType.eddystoneUID, namespace + instance)
            case .eddystoneURL(let url, _): (BeaconMessageType.eddystoneURL, Array(url.utf8))
            case .eddystoneTLM(let telemetry): (BeaconMessageType.eddystoneTLM, telemetry.frameBytes)
            case .eddystoneEncryptedTLM(let ciphertext, let salt, let mic):
                (
                    BeaconMessageType.eddystoneTLM,
                    [1] + ciphertext + [UInt8(salt >> 8), UInt8(salt & 0xFF), UInt8(mic >> 8), UInt8(mic & 0xFF)]
                )
            case .eddystoneEID(let id, _): (BeaconMessageType.eddystoneEID, id)
            case .iBeacon(let uuid, let major, let minor, _):
                (
                    BeaconMessageType.iBeaconID,
                    withUnsafeBytes(of: uuid.uuid) { Array($0) }
                        + [UInt8(major >> 8), UInt8(major & 0xFF), UInt8(minor >> 8), UInt8(minor & 0xFF)]
                )
            case .altBeacon(_, let id, _, _): (BeaconMessageType.altBeaconID, id)
            }
        return Message(content: Data(content), namespace: Message.reservedNamespace, type: type)
    }
}

/// Plain Eddystone telemetry (TLM version 0).
public struct EddystoneTelemetry: Sendable, Hashable {
    /// Battery voltage in mV (0: not supported).
    public var batteryMillivolts: UInt16
    /// The raw signed 8.8 fixed-point temperature; `0x8000` (−128 °C) means not supported.
    public var rawTemperature: Int16
    /// Advertising PDUs sent since power-up.
    public var advertisingCount: UInt32
    /// Time since power-up in units of 0.1 s.
    public var uptimeTenths: UInt32

    /// The temperature in °C, or `nil` when the beacon does not measure it.
    public var temperatureCelsius: Double? {
        rawTemperature == Int16.min ? nil : Double(rawTemperature) / 256
    }

    /// Time since power-up in seconds.
    public var uptimeSeconds: Double { Double(uptimeTenths) / 10 }

    /// The frame after its type byte: version 0, then the fields big-endian.
    var frameBytes: [UInt8] {
        let temperature = UInt16(bitPattern: rawTemperature)
        return [0, UInt8(batteryMillivolts >> 8), UInt8(batteryMillivolts & 0xFF), UInt8(temperature >> 8),
            UInt8(temperature & 0xFF)] + bigEndian(advertisingCount) + bigEndian(uptimeTenths)
    }

    private func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}

/// A beacon seen by a scan: its frame, the advertiser's address, the RSSI and an estimated distance.
public struct Beacon: Sendable, Hashable {
    /// The decoded frame.
    public var frame: BeaconFrame
    /// The advertiser's Bluetooth device address.
    public var address: String
    /// The received signal strength in dBm.
    public var rssi: Int

    /// Creates a beacon sighting.
    public init(frame: BeaconFrame, address: String, rssi: Int) {
        self.frame = frame
        self.address = address
        self.rssi = rssi
    }

    /// The estimated distance in metres by the log-distance path-loss model with exponent 2:
    /// d = 10^((RSSI₁ₘ − RSSI) / 20); `nil` when the frame has no reference power.
    public var estimatedDistance: Double? {
        guard let reference = frame.referenceRSSIAt1m else { return nil }
        return BeaconDistance.estimate(rssi: rssi, referenceAt1m: reference)
    }
}

/// Distance from RSSI.
public enum BeaconDistance {
    /// d = 10^((reference − rssi) / (10 · exponent)) metres; exponent 2 is free space, 2–4 indoors.
    public static func estimate(rssi: Int, referenceAt1m: Int, exponent: Double = 2) -> Double {
        pow(10, Double(referenceAt1m - rssi) / (10 * exponent))
    }
}
