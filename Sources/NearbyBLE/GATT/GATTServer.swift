/// The GATT server of one LE connection as a value-type machine: it answers the client's ATT requests from a
/// ``GATTDatabase`` (MTU exchange, service, characteristic and descriptor discovery, reads and long reads, writes,
/// CCCD writes) and keeps this connection's ATT MTU and CCCD values. It returns the PDUs to send and what the
/// caller must know; it does no I/O.
///
/// A write to a characteristic value with the write property is answered only when the caller says so
/// (``respondToWrite()``), so a slow consumer holds the client back (ATT allows one request at a time).
package struct GATTServer: Sendable {
    /// What the caller does.
    package enum Action: Sendable, Hashable {
        /// Send this PDU to the client.
        case send(ATTPDU)
        /// The client wrote `value` to the characteristic `uuid`; with `needsResponse` the caller answers with
        /// ``respondToWrite()`` once it took the value.
        case written(uuid: BLEUUID, value: [UInt8], needsResponse: Bool)
        /// The client changed a CCCD: whether it now wants indications and notifications of `uuid`.
        case subscriptionChanged(uuid: BLEUUID, indications: Bool, notifications: Bool)
        /// The client confirmed the last indication.
        case confirmed
    }

    /// The attribute table (shared by every connection; values may change).
    package var database: GATTDatabase
    /// This server's receive MTU (what it answers an MTU exchange with).
    package let localMTU: Int
    /// The connection's ATT MTU.
    package private(set) var mtu = ATTPDU.defaultMTU
    private var configurations: [UInt16: UInt16] = [:]

    /// A server for one connection.
    package init(database: GATTDatabase, localMTU: Int = 517) {
        self.database = database
        self.localMTU = max(ATTPDU.defaultMTU, localMTU)
    }

    /// Sets the ATT MTU a client exchange agreed on (when this connection's own client role exchanged it).
    package mutating func setMTU(_ mtu: Int) {
        self.mtu = max(ATTPDU.defaultMTU, mtu)
    }

    /// Whether the client enabled indications of the characteristic with this value handle.
    package func indicationsEnabled(valueHandle: UInt16) -> Bool {
        guard let cccd = cccdHandle(valueHandle: valueHandle) else { return false }
        return (configurations[cccd] ?? 0) & 0x0002 != 0
    }

    /// Whether the client enabled notifications of the characteristic with this value handle.
    package func notificationsEnabled(valueHandle: UInt16) -> Bool {
        guard let cccd = cccdHandle(valueHandle: valueHandle) else { return false }
        return (configurations[cccd] ?? 0) & 0x0001 != 0
    }

    /// The Write Response to the client's pending write.
    package func respondToWrite() -> ATTPDU { .writeResponse }

    /// Answers one PDU from the client.
    package mutating func receive(_ pdu: ATTPDU) -> [Action] {
        switch pdu {
        case .exchangeMTURequest(let clientMTU):
            mtu = max(ATTPDU.defaultMTU, min(Int(clientMTU), localMTU))
            return [.send(.exchangeMTUResponse(mtu: UInt16(localMTU)))]
        case .readByGroupTypeRequest(let start, let end, let type):
            return [.send(readByGroupType(start: start, end: end, type: type))]
        case .findByTypeValueRequest(let start, let end, let type, let value):
            return [.send(findByTypeValue(start: start, end: end, type: type, value: value))]
        case .readByTypeRequest(let start, let end, let type):
            return [.send(readByType(start: start, end: end, type: type))]
        case .findInformationRequest(let start, let end):
            return [.send(findInformation(start: start, end: end))]
        case .readRequest(let handle):
            return [.send(read(handle: handle, offset: 0, opcode: ATTPDU.Opcode.readRequest))]
        case .readBlobRequest(let handle, let offset):
            return [.send(read(handle: handle, offset: Int(offset), opcode: ATTPDU.Opcode.readBlobRequest))]
        case .writeRequest(let handle, let value):
            return write(handle: handle, value: value, withResponse: true)
        case .writeCommand(let handle, let value):
            return write(handle: handle, value: value, withResponse: false)
        case .confirmation:
            return [.confirmed]
        default:
            if ATTPDU.isRequest(pdu.opcode) {
                return [.send(error(pdu.opcode, 0, ATTPDU.ErrorCode.requestNotSupported))]
            }
            return []
        }
    }

    private func error(_ opcode: UInt8, _ handle: UInt16, _ code: UInt8) -> ATTPDU {
        .errorResponse(requestOpcode: opcode, handle: handle, error: code)
    }

    private func checkedRange(_ start: UInt16, _ end: UInt16, _ opcode: UInt8) -> ATTPDU? {
        start == 0 || start > end ? error(opcode, start, ATTPDU.ErrorCode.invalidHandle) : nil
    }

    private func inRange(_ start: UInt16, _ end: UInt16) -> ArraySlice<GATTDatabase.Attribute> {
        database.attributes.filter { $0.handle >= start && $0.handle <= end }[...]
    }

    private func readByGroupType(start: UInt16, end: UInt16, type: BLEUUID) -> ATTPDU {
        let opcode = ATTPDU.Opcode.readByGroupTypeRequest
        if let bad = checkedRange(start, end, opcode) { return bad }
        var entries: [(handle: UInt16, groupEnd: UInt16, value: [UInt8])] = []
        if type == .primaryService {
            for attribute in inRange(start, end) {
                guard case .service(let groupEnd) = attribute.role else { continue }
                if let first = entries.first, first.value.count != attribute.value.count { break }
                if 2 + (entries.count + 1) * (4 + attribute.value.count) > mtu { break }
                entries.append((attribute.handle, groupEnd, attribute.value))
            }
        }
        return entries.isEmpty ? error(opcode, start, ATTPDU.ErrorCode.attributeNotFound) : .readByGroupTypeResponse(entries)
    }

    private func findByTypeValue(start: UInt16, end: UInt16, type: UInt16, value: [UInt8]) -> ATTPDU {
        let opcode = ATTPDU.Opcode.findByTypeValueRequest
        if let bad = checkedRange(start, end, opcode) { return bad }
        var entries: [(handle: UInt16, groupEnd: UInt16)] = []
        for attribute in inRange(start, end) where attribute.type == BLEUUID(type) && attribute.value == value {
            if 1 + (entries.count + 1) * 4 > mtu { break }
            let groupEnd: UInt16 = if case .service(let groupEnd) = attribute.role { groupEnd } else { attribute.handle }
            entries.append((attribute.handle, groupEnd))
        }
        return entries.isEmpty ? error(opcode, start, ATTPDU.ErrorCode.attributeNotFound) : .findByTypeValueResponse(entries)
    }

    private func readByType(start: UInt16, end: UInt16, type: BLEUUID) -> ATTPDU {
        let opcode = ATTPDU.Opcode.readByTypeRequest
        if let bad = checkedRange(start, end, opcode) { return bad }
        var entries: [(handle: UInt16, value: [UInt8])] = []
        let maxValue = min(mtu - 4, 253)
        for attribute in inRange(start, end) where attribute.type == type {
            if case .value(let properties) = attribute.role, !properties.contains(.read) {
                if entries.isEmpty { return error(opcode, attribute.handle, ATTPDU.ErrorCode.readNotPermitted) }
                break
            }
            let value = Array(valueFor(attribute).prefix(maxValue))
            if let first = entries.first, first.value.count != value.count { break }
            if 2 + (entries.count + 1) * (2 + value.count) > mtu { break }
            entries.append((attribute.handle, value))
        }
        return entries.isEmpty ? error(opcode, start, ATTPDU.ErrorCode.attributeNotFound) : .readByTypeResponse(entries)
    }

    private func findInformation(start: UInt16, end: UInt16) -> ATTPDU {
        let opcode = ATTPDU.Opcode.findInformationRequest
        if let bad = checkedRange(start, end, opcode) { return bad }
        var entries: [(handle: UInt16, type: BLEUUID)] = []
        for attribute in inRange(start, end) {
            let short = attribute.type.short != nil
            if let first = entries.first, (first.type.short != nil) != short { break }
            if 2 + (entries.count + 1) * (2 + (short ? 2 : 16)) > mtu { break }
            entries.append((attribute.handle, attribute.type))
        }
        return entries.isEmpty ? error(opcode, start, ATTPDU.ErrorCode.attributeNotFound) : .findInformationResponse(entries)
    }

    private func read(handle: UInt16, offset: Int, opcode: UInt8) -> ATTPDU {
        guard let attribute = database.attribute(handle) else { return error(opcode, handle, ATTPDU.ErrorCode.invalidHandle) }
        if case .value(let properties) = attribute.role, !properties.contains(.read) {
            return error(opcode, handle, ATTPDU.ErrorCode.readNotPermitted)
        }
        let value = valueFor(attribute)
        guard offset <= value.count else { return error(opcode, handle, ATTPDU.ErrorCode.invalidOffset) }
        let part = Array(value[offset...].prefix(mtu - 1))
        return opcode == ATTPDU.Opcode.readRequest ? .readResponse(part) : .readBlobResponse(part)
    }

    private func valueFor(_ attribute: GATTDatabase.Attribute) -> [UInt8] {
        if case .clientConfiguration = attribute.role {
            let value = configurations[attribute.handle] ?? 0
            return [UInt8(value & 0xFF), UInt8(value >> 8)]
        }
        return attribute.value
    }

    private mutating func write(handle: UInt16, value: [UInt8], withResponse: Bool) -> [Action] {
        let opcode = ATTPDU.Opcode.writeRequest
        func fail(_ code: UInt8) -> [Action] { withResponse ? [.send(error(opcode, handle, code))] : [] }
        guard let attribute = database.attribute(handle) else { return fail(ATTPDU.ErrorCode.invalidHandle) }
        guard value.count <= ATTPDU.maxValueLength else { return fail(ATTPDU.ErrorCode.invalidAttributeValueLength) }
        switch attribute.role {
        case .clientConfiguration(let valueHandle):
            guard value.count == 2 else { return fail(ATTPDU.ErrorCode.invalidAttributeValueLength) }
            let bits = UInt16(value[0]) | UInt16(value[1]) << 8
            configurations[handle] = bits
            var actions: [Action] = []
            if withResponse { actions.append(.send(.writeResponse)) }
            if let uuid = database.characteristic(atValueHandle: valueHandle) {
                actions.append(.subscriptionChanged(uuid: uuid, indications: bits & 0x0002 != 0, notifications: bits & 0x0001 != 0))
            }
            return actions
        case .value(let properties):
            let allowed = withResponse ? properties.contains(.write) : properties.contains(.writeWithoutResponse)
            guard allowed else { return fail(ATTPDU.ErrorCode.writeNotPermitted) }
            return [.written(uuid: attribute.type, value: value, needsResponse: withResponse)]
        default:
            return fail(ATTPDU.ErrorCode.writeNotPermitted)
        }
    }

    private func cccdHandle(valueHandle: UInt16) -> UInt16? {
        guard let next = database.attribute(valueHandle + 1),
            case .clientConfiguration(let owner) = next.role, owner == valueHandle
        else { return nil }
        return next.handle
    }
}
