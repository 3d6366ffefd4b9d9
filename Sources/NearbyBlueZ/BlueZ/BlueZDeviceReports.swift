/// One advertisement as BlueZ discovery reports it (`org.bluez.Device1`): who sent it, its service data and
/// manufacturer data, its RSSI.
package struct BlueZScanReport: Sendable, Hashable {
    /// The sender's address, `AA:BB:CC:DD:EE:FF`.
    package var address: String
    /// `public` or `random`.
    package var addressType: String
    /// Service data: 128-bit UUID string → bytes (16-bit UUIDs arrive as `0000xxxx-0000-1000-8000-00805f9b34fb`).
    package var serviceData: [String: [UInt8]]
    /// The signal strength in dBm, when BlueZ knows it.
    package var rssi: Int?
    /// Manufacturer-specific data (`Device1.ManufacturerData`, `a{qv}`): company identifier → the bytes after it.
    package var manufacturerData: [UInt16: [UInt8]]

    /// Creates a report.
    package init(
        address: String, addressType: String, serviceData: [String: [UInt8]], rssi: Int?,
        manufacturerData: [UInt16: [UInt8]] = [:]
    ) {
        self.address = address
        self.addressType = addressType
        self.serviceData = serviceData
        self.rssi = rssi
        self.manufacturerData = manufacturerData
    }

    /// The service data of a 16-bit UUID (e.g. 0xFEF3), if present.
    package func serviceData(for uuid: UInt16) -> [UInt8]? {
        serviceData[BlueZ.uuid(uuid)]
    }
}

/// The devices below one adapter, fed the object manager's signals; turns fresh advertisement data (a new
/// `Device1`, or `ServiceData`/`RSSI` changing, which BlueZ signals for every advertisement under a discovery
/// filter with `DuplicateData`; `ManufacturerData` likewise) into `BlueZScanReport`s. Pure value type, no D-Bus.
package struct BlueZDeviceReports: Sendable {
    private struct Device: Sendable {
        var address = ""
        var addressType = "public"
        var serviceData: [String: [UInt8]] = [:]
        var manufacturerData: [UInt16: [UInt8]] = [:]
        var rssi: Int?
    }

    /// The adapter's object path; devices elsewhere are ignored.
    package let adapterPath: String
    /// Only devices with service data for one of these UUIDs are reported (empty: every device).
    package let serviceDataUUIDs: Set<String>
    private var devices: [String: Device] = [:]

    /// Creates a table for `adapterPath`.
    package init(adapterPath: String, serviceDataUUIDs: Set<String> = []) {
        self.adapterPath = adapterPath
        self.serviceDataUUIDs = Set(serviceDataUUIDs.map { $0.lowercased() })
    }

    /// Devices known before discovery started (from `GetManagedObjects`): remembered, not reported (their data
    /// may be old).
    package mutating func known(_ objects: [String: [String: [String: DBusValue]]]) {
        for (path, interfaces) in objects {
            guard let properties = interfaces[BlueZ.deviceInterface], isDevice(path) else { continue }
            var device = Device()
            merge(properties, into: &device)
            devices[path] = device
        }
    }

    /// `InterfacesAdded`: a device seen for the first time is reported.
    package mutating func interfacesAdded(path: String, interfaces: [String: [String: DBusValue]]) -> BlueZScanReport? {
        guard let properties = interfaces[BlueZ.deviceInterface], isDevice(path) else { return nil }
        var device = devices[path] ?? Device()
        merge(properties, into: &device)
        devices[path] = device
        return report(device)
    }

    /// `InterfacesRemoved`: the device is forgotten (BlueZ dropped it from its cache).
    package mutating func interfacesRemoved(path: String, interfaces: [String]) {
        if interfaces.contains(BlueZ.deviceInterface) { devices[path] = nil }
    }

    /// `PropertiesChanged` of a `Device1`: reported when service data, manufacturer data or RSSI changed.
    package mutating func propertiesChanged(path: String, changed: [String: DBusValue]) -> BlueZScanReport? {
        guard var device = devices[path], isDevice(path) else { return nil }
        merge(changed, into: &device)
        devices[path] = device
        guard changed["ServiceData"] != nil || changed["ManufacturerData"] != nil || changed["RSSI"] != nil else {
            return nil
        }
        return report(device)
    }

    /// The report one bluetoothd signal means, if any: `InterfacesAdded`, `InterfacesRemoved` or `PropertiesChanged`
    /// of a `Device1` (the connection has checked the sender already; arguments of the wrong shape are ignored).
    package mutating func apply(_ signal: DBusReceivedMessage) -> BlueZScanReport? {
        switch signal.member {
        case "InterfacesAdded":
            guard let path = signal.arguments.first?.string,
                let interfaces = signal.arguments.dropFirst().first?.interfaceMap
            else { return nil }
            return interfacesAdded(path: path, interfaces: interfaces)
        case "InterfacesRemoved":
            if let path = signal.arguments.first?.string, let interfaces = signal.arguments.dropFirst().first?.strings {
                interfacesRemoved(path: path, interfaces: interfaces)
            }
            return nil
        case "PropertiesChanged":
            guard signal.arguments.first?.string == BlueZ.deviceInterface,
                let changed = signal.arguments.dropFirst().first?.propertyMap
            else { return nil }
            return propertiesChanged(path: signal.path, changed: changed)
        default:
            return nil
        }
    }

    private func isDevice(_ path: String) -> Bool {
        path.hasPrefix(adapterPath + "/dev_")
    }

    private func merge(_ properties: [String: DBusValue], into device: inout Device) {
        if let address = properties["Address"]?.string { device.address = address }
        if let type = properties["AddressType"]?.string { device.addressType = type }
        if let rssi = properties["RSSI"]?.integer { device.rssi = rssi }
        if let data = properties["ServiceData"]?.propertyMap {
            var serviceData: [String: [UInt8]] = [:]
            for (uuid, value) in data {
                if let bytes = value.bytes { serviceData[uuid.lowercased()] = bytes }
            }
            device.serviceData = serviceData
        }
        if let data = properties["ManufacturerData"], let manufacturerData = Self.manufacturerData(data) {
            device.manufacturerData = manufacturerData
        }
    }

    /// `a{qv}` with `ay` values (company identifier → bytes); nil for any other shape.
    static func manufacturerData(_ value: DBusValue) -> [UInt16: [UInt8]]? {
        guard case .dictionary(_, _, let entries) = value.unwrapped else { return nil }
        var result: [UInt16: [UInt8]] = [:]
        for entry in entries {
            guard let company = entry.key.uint16, let bytes = entry.value.bytes else { return nil }
            result[company] = bytes
        }
        return result
    }

    private func report(_ device: Device) -> BlueZScanReport? {
        guard !device.address.isEmpty else { return nil }
        if !serviceDataUUIDs.isEmpty, !device.serviceData.keys.contains(where: serviceDataUUIDs.contains) { return nil }
        return BlueZScanReport(
            address: device.address, addressType: device.addressType, serviceData: device.serviceData,
            rssi: device.rssi, manufacturerData: device.manufacturerData)
    }
}
