import NearbyWire

extension UserSpaceHostRadio {
    /// Publishes the GATT server on the user-space host.
    package func publishGATT(_ services: [GATTServiceDefinition]) async throws -> any BLEGATTServerHandle {
        let host = try await host()
        return HostGATTServer(host: host, events: try await host.publishGATT(services))
    }

    /// Connects to `address` as a GATT client through the user-space host.
    package func connectGATT(to address: BLEAddress) async throws -> any BLEGATTClientConnection {
        let host = try await host()
        let connection = try await host.connect(to: address)
        return HostGATTClient(host: host, connection: connection, peer: address)
    }
}

/// ``BLEGATTServerHandle`` over ``BLEHost``.
struct HostGATTServer: BLEGATTServerHandle {
    let host: BLEHost
    let events: AsyncStream<GATTServerEvent>

    func respondToWrite(_ peer: GATTPeer) async { await host.respondToWrite(peer) }

    func indicate(_ value: [UInt8], of uuid: BLEUUID, to peer: GATTPeer) async throws {
        try await host.indicate(value, of: uuid, to: peer)
    }

    func maxValueLength(to peer: GATTPeer) async -> Int { await host.attMTU(connection: peer.connection) - 3 }

    func updateValue(_ value: [UInt8], of uuid: BLEUUID) async { await host.updateGATTValue(value, of: uuid) }

    func disconnect(_ peer: GATTPeer) async { await host.disconnect(handle: peer.connection) }

    func stop() async { await host.unpublishGATT() }
}

/// ``BLEGATTClientConnection`` over ``BLEHost``.
struct HostGATTClient: BLEGATTClientConnection {
    let host: BLEHost
    let connection: UInt16
    let peer: BLEAddress

    func exchangeMTU() async throws -> Int { try await host.exchangeATTMTU(connection: connection) }

    func discoverCharacteristics(service: BLEUUID) async throws -> [GATTRemoteCharacteristic] {
        try await host.discoverCharacteristics(connection: connection, service: service)
    }

    func read(_ characteristic: GATTRemoteCharacteristic) async throws -> [UInt8] {
        try await host.readValue(connection: connection, handle: characteristic.valueHandle)
    }

    func write(_ value: [UInt8], to characteristic: GATTRemoteCharacteristic) async throws {
        try await host.writeValue(connection: connection, handle: characteristic.valueHandle, value)
    }

    func subscribeToIndications(_ characteristic: GATTRemoteCharacteristic) async throws -> AsyncStream<[UInt8]> {
        try await host.subscribeToIndications(connection: connection, characteristic)
    }

    func confirmIndication() async { await host.confirmIndication(connection: connection) }

    func disconnect() async { await host.disconnect(handle: connection) }
}
