/// A characteristic a GATT server offers.
package struct GATTCharacteristicDefinition: Sendable, Hashable {
    /// Characteristic properties (Bluetooth Core Vol 3 Part G §3.3.1.1).
    package struct Properties: OptionSet, Sendable, Hashable {
        /// The bits.
        package let rawValue: UInt8
        /// Creates properties from their bits.
        package init(rawValue: UInt8) { self.rawValue = rawValue }
        /// Read.
        package static let read = Properties(rawValue: 0x02)
        /// Write Without Response.
        package static let writeWithoutResponse = Properties(rawValue: 0x04)
        /// Write (with response).
        package static let write = Properties(rawValue: 0x08)
        /// Notify.
        package static let notify = Properties(rawValue: 0x10)
        /// Indicate.
        package static let indicate = Properties(rawValue: 0x20)
    }

    /// The characteristic's type.
    package var uuid: BLEUUID
    /// What clients may do with it.
    package var properties: Properties
    /// The value clients read (for readable characteristics).
    package var value: [UInt8]

    /// Creates a characteristic.
    package init(uuid: BLEUUID, properties: Properties, value: [UInt8] = []) {
        self.uuid = uuid
        self.properties = properties
        self.value = value
    }
}

/// A primary service a GATT server offers.
package struct GATTServiceDefinition: Sendable, Hashable {
    /// The service's type.
    package var uuid: BLEUUID
    /// Its characteristics, in handle order.
    package var characteristics: [GATTCharacteristicDefinition]

    /// Creates a service.
    package init(uuid: BLEUUID, characteristics: [GATTCharacteristicDefinition]) {
        self.uuid = uuid
        self.characteristics = characteristics
    }
}

/// The attribute table of a GATT server: for each service a Primary Service declaration, then for each
/// characteristic its declaration, its value, and a Client Characteristic Configuration descriptor when it
/// notifies or indicates. Handles count up from 1 in that order (Bluetooth Core Vol 3 Part G §3).
package struct GATTDatabase: Sendable, Hashable {
    /// What an attribute is.
    package enum Role: Sendable, Hashable {
        /// A Primary Service declaration whose group ends at `groupEnd`.
        case service(groupEnd: UInt16)
        /// A characteristic declaration.
        case declaration
        /// A characteristic's value.
        case value(GATTCharacteristicDefinition.Properties)
        /// A Client Characteristic Configuration descriptor of the characteristic whose value handle is given.
        case clientConfiguration(valueHandle: UInt16)
    }

    /// One attribute.
    package struct Attribute: Sendable, Hashable {
        /// The handle.
        package var handle: UInt16
        /// The attribute type.
        package var type: BLEUUID
        /// The value (for a CCCD: the default, 0; each connection keeps its own).
        package var value: [UInt8]
        /// What it is.
        package var role: Role
    }

    /// The attributes, by handle order (handle `i + 1` at index `i`).
    package private(set) var attributes: [Attribute] = []
    private var valueHandles: [BLEUUID: UInt16] = [:]

    /// Builds the table for `services`.
    package init(services: [GATTServiceDefinition]) {
        for service in services {
            let serviceIndex = attributes.count
            append(type: .primaryService, value: service.uuid.attBytes, role: .service(groupEnd: 0))
            for characteristic in service.characteristics {
                let valueHandle = UInt16(attributes.count + 2)
                let declaration = [characteristic.properties.rawValue, UInt8(valueHandle & 0xFF), UInt8(valueHandle >> 8)]
                    + characteristic.uuid.attBytes
                append(type: .characteristic, value: declaration, role: .declaration)
                append(type: characteristic.uuid, value: characteristic.value, role: .value(characteristic.properties))
                valueHandles[characteristic.uuid] = valueHandle
                if !characteristic.properties.isDisjoint(with: [.notify, .indicate]) {
                    append(type: .clientCharacteristicConfiguration, value: [0, 0], role: .clientConfiguration(valueHandle: valueHandle))
                }
            }
            attributes[serviceIndex].role = .service(groupEnd: UInt16(attributes.count))
        }
    }

    private mutating func append(type: BLEUUID, value: [UInt8], role: Role) {
        attributes.append(Attribute(handle: UInt16(attributes.count + 1), type: type, value: value, role: role))
    }

    /// The attribute with `handle`.
    package func attribute(_ handle: UInt16) -> Attribute? {
        guard handle >= 1, Int(handle) <= attributes.count else { return nil }
        return attributes[Int(handle) - 1]
    }

    /// The value handle of the characteristic of type `uuid` (the first, if several).
    package func valueHandle(of uuid: BLEUUID) -> UInt16? { valueHandles[uuid] }

    /// The characteristic type of a value handle.
    package func characteristic(atValueHandle handle: UInt16) -> BLEUUID? {
        guard let attribute = attribute(handle), case .value = attribute.role else { return nil }
        return attribute.type
    }

    /// Replaces the value of the characteristic of type `uuid`; `false` when there is none.
    @discardableResult
    package mutating func setValue(_ value: [UInt8], of uuid: BLEUUID) -> Bool {
        guard let handle = valueHandles[uuid] else { return false }
        attributes[Int(handle) - 1].value = value
        return true
    }
}
