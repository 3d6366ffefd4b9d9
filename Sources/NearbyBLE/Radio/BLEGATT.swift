import NearbyWire

/// A GATT server a radio publishes: what clients do (``events``), and the answers and indications to them.
package protocol BLEGATTServerHandle: Sendable {
    /// What clients do, in order; ends when the server stops or the radio fails.
    var events: AsyncStream<GATTServerEvent> { get }
    /// Answers the write with response `peer` is waiting on.
    func respondToWrite(_ peer: GATTPeer) async
    /// Indicates a value to `peer` and waits for its confirmation.
    func indicate(_ value: [UInt8], of uuid: BLEUUID, to peer: GATTPeer) async throws
    /// The longest value one indication to `peer` carries (the ATT MTU minus 3).
    func maxValueLength(to peer: GATTPeer) async -> Int
    /// Replaces a characteristic's value (what clients read next).
    func updateValue(_ value: [UInt8], of uuid: BLEUUID) async
    /// Ends `peer`'s LE connection.
    func disconnect(_ peer: GATTPeer) async
    /// Removes the server.
    func stop() async
}

/// A GATT client connection a radio made to a peer's GATT server.
package protocol BLEGATTClientConnection: Sendable {
    /// The peer.
    var peer: BLEAddress { get }
    /// Exchanges ATT MTUs; returns the connection's ATT MTU.
    func exchangeMTU() async throws -> Int
    /// Finds a primary service and its characteristics; an empty list when the peer serves no such service.
    func discoverCharacteristics(service: BLEUUID) async throws -> [GATTRemoteCharacteristic]
    /// Reads a whole value.
    func read(_ characteristic: GATTRemoteCharacteristic) async throws -> [UInt8]
    /// Writes a value with response.
    func write(_ value: [UInt8], to characteristic: GATTRemoteCharacteristic) async throws
    /// Enables indications; the stream ends with the connection. Each value must be confirmed with
    /// ``confirmIndication()`` once taken.
    func subscribeToIndications(_ characteristic: GATTRemoteCharacteristic) async throws -> AsyncStream<[UInt8]>
    /// Confirms the last indicated value.
    func confirmIndication() async
    /// Ends the LE connection.
    func disconnect() async
}

extension BLERadio {
    /// Radios without GATT support throw `.mediumUnavailable`.
    package func publishGATT(_ services: [GATTServiceDefinition]) async throws -> any BLEGATTServerHandle {
        throw NearbyError(.mediumUnavailable, "\(self) cannot serve GATT")
    }

    /// Radios without GATT support throw `.mediumUnavailable`.
    package func connectGATT(to address: BLEAddress) async throws -> any BLEGATTClientConnection {
        throw NearbyError(.mediumUnavailable, "\(self) cannot connect as a GATT client")
    }
}
