import NearbyBLE
import NearbyWire

/// The pure translations between NearbyBlueZ's D-Bus view and NearbyBLE's radio types: BlueZ discovery reports
/// become `AdvertisingReport`s with rebuilt AD structures, and the adapter's state becomes a `BLERadioState`.
package enum BlueZRadioMapping {
    /// The Bluetooth base UUID's suffix: a 128-bit UUID ending in it is a 16-bit one (`0000xxxx-…`).
    private static let baseSuffix = "-0000-1000-8000-00805f9b34fb"

    /// The advertising report NearbyBLE's discovery and beacon decoders read: Flags (LE General Discoverable,
    /// BR/EDR not supported), then one Service Data AD structure per service data entry (16-bit UUIDs as type
    /// 0x16, others as 128-bit type 0x21), sorted by UUID, then one Manufacturer Specific Data structure (0xFF:
    /// company identifier little endian, then the bytes) per company, sorted by identifier. `nil` for an address
    /// BlueZ gave in a form we cannot read.
    package static func advertisingReport(_ report: BlueZScanReport) -> AdvertisingReport? {
        let kind = report.addressType == "public" ? "public" : "random"
        guard let address = BLEAddress(string: "\(report.address)/\(kind)") else { return nil }
        let rssi = Int8(clamping: report.rssi ?? 127)
        return AdvertisingReport(
            eventType: 0x00, isExtended: false, address: address, data: advertisingData(report.serviceData, manufacturerData: report.manufacturerData),
            rssi: rssi)
    }

    /// The adapter's identity address as the kernel's `sockaddr_l2` wants it: `Address` with `AddressType`
    /// (`random` for a static random address, otherwise public). `nil` for an address that does not parse.
    package static func localAddress(_ adapter: BlueZAdapterState) -> BLEAddress? {
        BLEAddress(string: "\(adapter.address)/\(adapter.addressType == "random" ? "random" : "public")")
    }

    /// Flags plus the service data and manufacturer data AD structures (entries that would not fit one AD structure
    /// are left out).
    package static func advertisingData(
        _ serviceData: [String: [UInt8]], manufacturerData: [UInt16: [UInt8]] = [:]
    ) -> [UInt8] {
        var data: [UInt8] = [0x02, AdvertisingData.flagsType, 0x06]
        for (uuid, bytes) in serviceData.sorted(by: { $0.key < $1.key }) {
            if let short = shortUUID(uuid) {
                guard bytes.count + 3 <= 255 else { continue }
                data += [UInt8(bytes.count + 3), AdvertisingData.serviceData16Type, UInt8(short & 0xFF), UInt8(short >> 8)]
                data += bytes
            } else if let long = longUUIDBytes(uuid) {
                guard bytes.count + 17 <= 255 else { continue }
                data += [UInt8(bytes.count + 17), 0x21] + long + bytes
            }
        }
        for (company, bytes) in manufacturerData.sorted(by: { $0.key < $1.key }) where bytes.count + 3 <= 255 {
            data += [UInt8(bytes.count + 3), 0xFF, UInt8(company & 0xFF), UInt8(company >> 8)] + bytes
        }
        return data
    }

    /// `0000fef3-0000-1000-8000-00805f9b34fb` → 0xFEF3; nil for a UUID outside the Bluetooth base.
    package static func shortUUID(_ uuid: String) -> UInt16? {
        let text = uuid.lowercased()
        guard text.count == 36, text.hasPrefix("0000"), text.hasSuffix(baseSuffix) else { return nil }
        return UInt16(text.dropFirst(4).prefix(4), radix: 16)
    }

    /// A 128-bit UUID string's 16 bytes, least significant first (as AD structures carry them).
    private static func longUUIDBytes(_ uuid: String) -> [UInt8]? {
        let hex = Array(uuid.filter { $0 != "-" })
        guard hex.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 32, by: 2) {
            guard let byte = UInt8(String(hex[index..<index + 2]), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes.reversed()
    }

    /// The radio's state: powered while the adapter exists and is powered; otherwise unavailable, saying whether
    /// `bluetoothd` is gone, the adapter is missing, or it is powered off (which includes rfkill).
    package static func radioState(adapter: BlueZAdapterState?, daemonPresent: Bool, name: String) -> BLERadioState {
        let code = NearbyError.Code(rawValue: "bluetoothUnavailable")
        guard daemonPresent else {
            return .unavailable(NearbyError(code, "bluetoothd is not on the system bus (BlueZ adapter \(name))"))
        }
        guard let adapter else { return .unavailable(NearbyError(code, "BlueZ has no adapter \(name)")) }
        guard adapter.powered else {
            return .unavailable(NearbyError(code, "BlueZ adapter \(adapter.name) is powered off (or blocked by rfkill)"))
        }
        return .powered
    }
}
