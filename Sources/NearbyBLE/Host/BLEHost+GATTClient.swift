import NearbyWire

/// GATT client procedures (Bluetooth Core Vol 3 Part G §4) over ``attRequest(connection:_:)``: primary service
/// discovery by UUID, characteristic and descriptor discovery, long reads, writes with response and enabling
/// indications.
extension BLEHost {
    /// Finds the primary service `service` on the peer of `connection` and its characteristics (with their CCCD
    /// handles); an empty list when the peer has no such service (its server answers the service discovery with an
    /// ATT error).
    /// - Throws: an ATT error of the characteristic discovery, `.malformedATTPDU`, or the link's error.
    package func discoverCharacteristics(connection: UInt16, service: BLEUUID) async throws -> [GATTRemoteCharacteristic] {
        let found: ATTPDU
        do {
            found = try await attRequest(
                connection: connection,
                .findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: service.attBytes))
        } catch let error as NearbyError where error.code == .gattRequestFailed {
            return []  // Attribute Not Found (or any refusal): the peer serves no such service.
        }
        guard case .findByTypeValueResponse(let groups) = found, let group = groups.first else {
            throw NearbyError(.malformedATTPDU, "unexpected answer to a service discovery")
        }
        var characteristics: [GATTRemoteCharacteristic] = []
        var start = group.handle
        discovery: while start < group.groupEnd {
            let answer: ATTPDU
            do {
                answer = try await attRequest(
                    connection: connection, .readByTypeRequest(start: start, end: group.groupEnd, type: .characteristic))
            } catch let error as NearbyError where error.code == .gattRequestFailed {
                break discovery  // Attribute Not Found: no more declarations.
            }
            guard case .readByTypeResponse(let entries) = answer, !entries.isEmpty else { break }
            for entry in entries {
                guard entry.value.count == 5 || entry.value.count == 19,
                    let uuid = BLEUUID(attBytes: entry.value[3...])
                else { throw NearbyError(.malformedATTPDU, "a characteristic declaration of \(entry.value.count) bytes") }
                let valueHandle = UInt16(entry.value[1]) | UInt16(entry.value[2]) << 8
                characteristics.append(GATTRemoteCharacteristic(
                    uuid: uuid, properties: .init(rawValue: entry.value[0]), valueHandle: valueHandle, cccdHandle: nil))
            }
            guard let last = entries.last?.handle, last < group.groupEnd else { break }
            start = last + 1
        }
        // Descriptors lie between a value handle and the next declaration (or the group's end).
        for index in characteristics.indices
        where !characteristics[index].properties.isDisjoint(with: [.notify, .indicate]) {
            let first = characteristics[index].valueHandle + 1
            let end = index + 1 < characteristics.count ? characteristics[index + 1].valueHandle - 2 : group.groupEnd
            guard first <= end else { continue }
            let answer = try? await attRequest(connection: connection, .findInformationRequest(start: first, end: end))
            if case .findInformationResponse(let entries) = answer,
                let cccd = entries.first(where: { $0.type == .clientCharacteristicConfiguration })
            {
                characteristics[index].cccdHandle = cccd.handle
            }
        }
        return characteristics
    }

    /// Reads a whole value (Read, then Read Blob while the parts fill the MTU), at most 512 bytes.
    package func readValue(connection: UInt16, handle: UInt16) async throws -> [UInt8] {
        let mtu = attMTU(connection: connection)
        guard case .readResponse(var value) = try await attRequest(connection: connection, .readRequest(handle: handle)) else {
            throw NearbyError(.malformedATTPDU, "unexpected answer to a read")
        }
        var part = value.count
        while part == mtu - 1, value.count < ATTPDU.maxValueLength {
            let answer: ATTPDU
            do {
                answer = try await attRequest(connection: connection, .readBlobRequest(handle: handle, offset: UInt16(value.count)))
            } catch let error as NearbyError where error.code == .gattRequestFailed {
                break  // Invalid Offset or Attribute Not Long: the value ended at the boundary.
            }
            guard case .readBlobResponse(let more) = answer else {
                throw NearbyError(.malformedATTPDU, "unexpected answer to a long read")
            }
            value += more
            part = more.count
        }
        return value
    }

    /// Writes a value with response (at most the ATT MTU minus 3 bytes).
    package func writeValue(connection: UInt16, handle: UInt16, _ value: [UInt8]) async throws {
        guard case .writeResponse = try await attRequest(connection: connection, .writeRequest(handle: handle, value: value)) else {
            throw NearbyError(.malformedATTPDU, "unexpected answer to a write")
        }
    }

    /// Enables indications of `characteristic` (writes `02 00` to its CCCD) and returns the stream of indicated
    /// values, which ends with the connection.
    package func subscribeToIndications(
        connection: UInt16, _ characteristic: GATTRemoteCharacteristic
    ) async throws -> AsyncStream<[UInt8]> {
        guard let cccd = characteristic.cccdHandle else {
            throw NearbyError(.gattRequestFailed, "characteristic \(characteristic.uuid) has no CCCD")
        }
        let updates = valueUpdates(connection: connection, valueHandle: characteristic.valueHandle)
        try await writeValue(connection: connection, handle: cccd, [0x02, 0x00])
        return updates
    }
}
