/// The data of one BlueZ advertisement (`org.bluez.LEAdvertisement1`), in plain values.
package struct BlueZAdvertisement: Sendable, Hashable {
    /// `Type`.
    package enum Kind: String, Sendable, Hashable {
        /// Connectable.
        case peripheral
        /// Non-connectable.
        case broadcast
    }

    /// Connectable or not.
    package var kind: Kind
    /// `ServiceUUIDs` (128-bit strings; BlueZ shortens them on air).
    package var serviceUUIDs: [String]
    /// `ServiceData`: UUID string → bytes.
    package var serviceData: [String: [UInt8]]
    /// `LocalName`, if any.
    package var localName: String?
    /// `SecondaryChannel` (`1M`, `2M`, `Coded`): set it to advertise with extended advertising PDUs, which
    /// `BlueZAdvertisingCapabilities.supportsExtendedAdvertising` says the controller can do. nil: legacy.
    package var secondaryChannel: String?
    /// `MinInterval`/`MaxInterval` in milliseconds; bluetoothd honours them only with `--experimental`.
    package var intervalMillis: ClosedRange<UInt32>?

    /// Creates an advertisement.
    package init(
        kind: Kind = .peripheral, serviceUUIDs: [String] = [], serviceData: [String: [UInt8]] = [:],
        localName: String? = nil, secondaryChannel: String? = nil, intervalMillis: ClosedRange<UInt32>? = nil
    ) {
        self.kind = kind
        self.serviceUUIDs = serviceUUIDs
        self.serviceData = serviceData
        self.localName = localName
        self.secondaryChannel = secondaryChannel
        self.intervalMillis = intervalMillis
    }

    /// A Nearby advertisement: `bytes` as service data of 0xFEF3 (also listed as a service UUID unless
    /// `listUUID` is false).
    package static func nearby(
        _ bytes: [UInt8], kind: Kind = .peripheral, extended: Bool = false, listUUID: Bool = false
    ) -> BlueZAdvertisement {
        let uuid = BlueZ.uuid(0xFEF3)
        return BlueZAdvertisement(
            kind: kind, serviceUUIDs: listUUID ? [uuid] : [], serviceData: [uuid: bytes],
            secondaryChannel: extended ? "1M" : nil)
    }

    /// The `LEAdvertisement1` properties bluetoothd reads (GetAll).
    package var properties: [String: DBusValue] {
        var properties: [String: DBusValue] = ["Type": .string(kind.rawValue)]
        if !serviceUUIDs.isEmpty { properties["ServiceUUIDs"] = .strings(serviceUUIDs) }
        if !serviceData.isEmpty {
            properties["ServiceData"] = .dictionary(
                keySignature: "s", valueSignature: "v",
                serviceData.sorted { $0.key < $1.key }.map {
                    DBusDictionaryEntry(key: .string($0.key), value: .variant(.bytes($0.value)))
                })
        }
        if let localName { properties["LocalName"] = .string(localName) }
        if let secondaryChannel { properties["SecondaryChannel"] = .string(secondaryChannel) }
        if let intervalMillis {
            properties["MinInterval"] = .uint32(intervalMillis.lowerBound)
            properties["MaxInterval"] = .uint32(intervalMillis.upperBound)
        }
        return properties
    }
}

/// What `org.bluez.LEAdvertisingManager1` says the adapter can do.
package struct BlueZAdvertisingCapabilities: Sendable, Hashable {
    /// `SupportedInstances`: how many more advertisements fit.
    package var supportedInstances: Int
    /// `ActiveInstances`.
    package var activeInstances: Int
    /// `SupportedIncludes` (`tx-power`, `appearance`, `local-name`).
    package var supportedIncludes: [String]
    /// `SupportedSecondaryChannels` (`1M`, `2M`, `Coded`); present only when the controller does extended
    /// advertising.
    package var secondaryChannels: [String]
    /// `SupportedFeatures` (`CanSetTxPower`, `HardwareOffload`); nil unless bluetoothd runs with `--experimental`.
    package var features: [String]?
    /// `SupportedCapabilities.MaxAdvLen`; nil unless bluetoothd runs with `--experimental`.
    package var maxAdvertisingDataLength: Int?

    /// Whether extended advertising (`SecondaryChannel`) can be used.
    package var supportsExtendedAdvertising: Bool { secondaryChannels.contains("1M") }

    /// Reads the capabilities from the manager's properties (`GetAll`).
    package init(properties: [String: DBusValue]) {
        supportedInstances = properties["SupportedInstances"]?.integer ?? 0
        activeInstances = properties["ActiveInstances"]?.integer ?? 0
        supportedIncludes = properties["SupportedIncludes"]?.strings ?? []
        secondaryChannels = properties["SupportedSecondaryChannels"]?.strings ?? []
        features = properties["SupportedFeatures"]?.strings
        maxAdvertisingDataLength = properties["SupportedCapabilities"]?.propertyMap?["MaxAdvLen"]?.integer
    }
}
