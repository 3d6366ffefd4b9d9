/// One LE connection's ATT bearer in the host: this side's GATT server for it (made on the peer's first request
/// while a database is published) and its GATT client queue, sharing one ATT MTU.
struct ATTBearer: Sendable {
    /// The ATT fixed channel.
    static let cid: UInt16 = 0x0004
    var server: GATTServer?
    var client = ATTClientQueue()
    var mtu = ATTPDU.defaultMTU
}

/// A GATT client connected to this host's GATT server: the LE connection and the peer's address.
package struct GATTPeer: Hashable, Sendable, CustomStringConvertible {
    /// The LE connection handle.
    package let connection: UInt16
    /// The peer's address.
    package let address: BLEAddress

    /// Creates a peer.
    package init(connection: UInt16, address: BLEAddress) {
        self.connection = connection
        self.address = address
    }

    /// The address and handle.
    package var description: String { "\(address) (handle \(connection))" }
}

/// What happens on a published GATT server, in order.
package enum GATTServerEvent: Sendable {
    /// A client wrote a characteristic. A write with response is answered only by `respondToWrite(_:)`.
    case written(GATTPeer, uuid: BLEUUID, value: [UInt8], needsResponse: Bool)
    /// A client enabled or disabled indications (or notifications) of a characteristic.
    case subscriptionChanged(GATTPeer, uuid: BLEUUID, indications: Bool)
    /// A client's LE connection ended.
    case disconnected(GATTPeer)
}

/// A characteristic found on a peer's GATT server.
package struct GATTRemoteCharacteristic: Sendable, Hashable {
    /// Its type.
    package var uuid: BLEUUID
    /// Its properties.
    package var properties: GATTCharacteristicDefinition.Properties
    /// Its value handle.
    package var valueHandle: UInt16
    /// Its Client Characteristic Configuration descriptor's handle, when it has one.
    package var cccdHandle: UInt16?

    /// Creates a characteristic found on a peer (a radio without handles, such as BlueZ, numbers them itself).
    package init(uuid: BLEUUID, properties: GATTCharacteristicDefinition.Properties, valueHandle: UInt16, cccdHandle: UInt16?) {
        self.uuid = uuid
        self.properties = properties
        self.valueHandle = valueHandle
        self.cccdHandle = cccdHandle
    }
}
