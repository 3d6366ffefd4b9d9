import NearbyWire

extension NearbyError.Code {
    /// An ATT PDU from the peer was malformed, or a GATT procedure failed on the peer's answer.
    public static let malformedATTPDU = NearbyError.Code(rawValue: "malformedATTPDU")
    /// The peer's GATT server answered a request with an ATT error.
    public static let gattRequestFailed = NearbyError.Code(rawValue: "gattRequestFailed")
}

/// The ATT fixed channel's PDUs that our GATT client and server use (Bluetooth Core, Vol 3 Part F §3.4), on L2CAP
/// CID 0x0004. Multi-byte fields are little-endian; UUIDs are 2 or 16 bytes (``BLEUUID``).
package enum ATTPDU: Hashable, Sendable {
    /// Error Response (0x01): the request's opcode, the handle in question, the error code.
    case errorResponse(requestOpcode: UInt8, handle: UInt16, error: UInt8)
    /// Exchange MTU Request (0x02): the client's receive MTU.
    case exchangeMTURequest(mtu: UInt16)
    /// Exchange MTU Response (0x03): the server's receive MTU.
    case exchangeMTUResponse(mtu: UInt16)
    /// Find Information Request (0x04).
    case findInformationRequest(start: UInt16, end: UInt16)
    /// Find Information Response (0x05): handles and their types.
    case findInformationResponse([(handle: UInt16, type: BLEUUID)])
    /// Find By Type Value Request (0x06): a 16-bit type and a value to match.
    case findByTypeValueRequest(start: UInt16, end: UInt16, type: UInt16, value: [UInt8])
    /// Find By Type Value Response (0x07): found handles and their group ends.
    case findByTypeValueResponse([(handle: UInt16, groupEnd: UInt16)])
    /// Read By Type Request (0x08).
    case readByTypeRequest(start: UInt16, end: UInt16, type: BLEUUID)
    /// Read By Type Response (0x09): handles and values, all of one length.
    case readByTypeResponse([(handle: UInt16, value: [UInt8])])
    /// Read Request (0x0A).
    case readRequest(handle: UInt16)
    /// Read Response (0x0B).
    case readResponse([UInt8])
    /// Read Blob Request (0x0C).
    case readBlobRequest(handle: UInt16, offset: UInt16)
    /// Read Blob Response (0x0D).
    case readBlobResponse([UInt8])
    /// Read By Group Type Request (0x10).
    case readByGroupTypeRequest(start: UInt16, end: UInt16, type: BLEUUID)
    /// Read By Group Type Response (0x11): group handles, ends and values, all of one length.
    case readByGroupTypeResponse([(handle: UInt16, groupEnd: UInt16, value: [UInt8])])
    /// Write Request (0x12).
    case writeRequest(handle: UInt16, value: [UInt8])
    /// Write Response (0x13).
    case writeResponse
    /// Handle Value Notification (0x1B).
    case notification(handle: UInt16, value: [UInt8])
    /// Handle Value Indication (0x1D).
    case indication(handle: UInt16, value: [UInt8])
    /// Handle Value Confirmation (0x1E).
    case confirmation
    /// Write Command (0x52).
    case writeCommand(handle: UInt16, value: [UInt8])
    /// Any other PDU: its opcode and parameters.
    case other(opcode: UInt8, parameters: [UInt8])

    /// ATT opcodes.
    package enum Opcode {
        static let errorResponse: UInt8 = 0x01
        static let exchangeMTURequest: UInt8 = 0x02
        static let exchangeMTUResponse: UInt8 = 0x03
        static let findInformationRequest: UInt8 = 0x04
        static let findInformationResponse: UInt8 = 0x05
        static let findByTypeValueRequest: UInt8 = 0x06
        static let findByTypeValueResponse: UInt8 = 0x07
        static let readByTypeRequest: UInt8 = 0x08
        static let readByTypeResponse: UInt8 = 0x09
        static let readRequest: UInt8 = 0x0A
        static let readResponse: UInt8 = 0x0B
        static let readBlobRequest: UInt8 = 0x0C
        static let readBlobResponse: UInt8 = 0x0D
        static let readByGroupTypeRequest: UInt8 = 0x10
        static let readByGroupTypeResponse: UInt8 = 0x11
        static let writeRequest: UInt8 = 0x12
        static let writeResponse: UInt8 = 0x13
        static let notification: UInt8 = 0x1B
        static let indication: UInt8 = 0x1D
        static let confirmation: UInt8 = 0x1E
        static let writeCommand: UInt8 = 0x52
    }

    /// ATT error codes (Vol 3 Part F §3.4.1.1) this host sends.
    package enum ErrorCode {
        /// The handle is not one of the server's.
        package static let invalidHandle: UInt8 = 0x01
        /// The attribute cannot be read.
        package static let readNotPermitted: UInt8 = 0x02
        /// The attribute cannot be written.
        package static let writeNotPermitted: UInt8 = 0x03
        /// The PDU was malformed.
        package static let invalidPDU: UInt8 = 0x04
        /// The server does not support the request.
        package static let requestNotSupported: UInt8 = 0x06
        /// The offset is past the value's end.
        package static let invalidOffset: UInt8 = 0x07
        /// No attribute in the range matched.
        package static let attributeNotFound: UInt8 = 0x0A
        /// The value has a length the attribute does not take.
        package static let invalidAttributeValueLength: UInt8 = 0x0D
        /// The request failed for a reason no other code names.
        package static let unlikelyError: UInt8 = 0x0E
    }

    /// The default (and smallest) LE ATT MTU.
    package static let defaultMTU = 23
    /// The largest value an attribute may have.
    package static let maxValueLength = 512

    /// The PDU's opcode.
    package var opcode: UInt8 {
        switch self {
        case .errorResponse: Opcode.errorResponse
        case .exchangeMTURequest: Opcode.exchangeMTURequest
        case .exchangeMTUResponse: Opcode.exchangeMTUResponse
        case .findInformationRequest: Opcode.findInformationRequest
        case .findInformationResponse: Opcode.findInformationResponse
        case .findByTypeValueRequest: Opcode.findByTypeValueRequest
        case .findByTypeValueResponse: Opcode.findByTypeValueResponse
        case .readByTypeRequest: Opcode.readByTypeRequest
        case .readByTypeResponse: Opcode.readByTypeResponse
        case .readRequest: Opcode.readRequest
        case .readResponse: Opcode.readResponse
        case .readBlobRequest: Opcode.readBlobRequest
        case .readBlobResponse: Opcode.readBlobResponse
        case .readByGroupTypeRequest: Opcode.readByGroupTypeRequest
        case .readByGroupTypeResponse: Opcode.readByGroupTypeResponse
        case .writeRequest: Opcode.writeRequest
        case .writeResponse: Opcode.writeResponse
        case .notification: Opcode.notification
        case .indication: Opcode.indication
        case .confirmation: Opcode.confirmation
        case .writeCommand: Opcode.writeCommand
        case .other(let opcode, _): opcode
        }
    }

    /// Whether the opcode is a request a server must answer (a response or an error), per the spec's method bits:
    /// not a command (bit 6), not a response, notification, indication or confirmation.
    package static func isRequest(_ opcode: UInt8) -> Bool {
        opcode & 0x40 == 0 && [0x02, 0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20].contains(opcode)
    }

    /// Decodes one PDU.
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/malformedATTPDU`` when a known PDU is cut short, a
    ///   list entry length does not divide the data, or a UUID has neither 2 nor 16 bytes.
    package init(decoding bytes: some Collection<UInt8>) throws(NearbyError) {
        var r = ByteReader(bytes, context: "ATT PDU", code: .malformedATTPDU)
        let opcode = try r.readByte("opcode")
        switch opcode {
        case Opcode.errorResponse:
            self = .errorResponse(
                requestOpcode: try r.readByte("request opcode"), handle: try r.readUInt16LittleEndian("handle"),
                error: try r.readByte("error code"))
        case Opcode.exchangeMTURequest:
            self = .exchangeMTURequest(mtu: try r.readUInt16LittleEndian("MTU"))
        case Opcode.exchangeMTUResponse:
            self = .exchangeMTUResponse(mtu: try r.readUInt16LittleEndian("MTU"))
        case Opcode.findInformationRequest:
            self = .findInformationRequest(start: try r.readUInt16LittleEndian("start"), end: try r.readUInt16LittleEndian("end"))
        case Opcode.findInformationResponse:
            let format = try r.readByte("format")
            guard format == 1 || format == 2 else { throw r.error("unknown format \(format)") }
            let size = format == 1 ? 2 : 16
            var entries: [(handle: UInt16, type: BLEUUID)] = []
            guard r.remaining > 0, r.remaining % (2 + size) == 0 else { throw r.error("information data of \(r.remaining) bytes") }
            while r.remaining > 0 {
                let handle = try r.readUInt16LittleEndian("handle")
                entries.append((handle, BLEUUID(attBytes: try r.readBytes(size, "type"))!))
            }
            self = .findInformationResponse(entries)
        case Opcode.findByTypeValueRequest:
            self = .findByTypeValueRequest(
                start: try r.readUInt16LittleEndian("start"), end: try r.readUInt16LittleEndian("end"),
                type: try r.readUInt16LittleEndian("type"), value: r.readRest())
        case Opcode.findByTypeValueResponse:
            guard r.remaining > 0, r.remaining % 4 == 0 else { throw r.error("handles information of \(r.remaining) bytes") }
            var entries: [(handle: UInt16, groupEnd: UInt16)] = []
            while r.remaining > 0 {
                entries.append((try r.readUInt16LittleEndian("handle"), try r.readUInt16LittleEndian("group end")))
            }
            self = .findByTypeValueResponse(entries)
        case Opcode.readByTypeRequest, Opcode.readByGroupTypeRequest:
            let start = try r.readUInt16LittleEndian("start")
            let end = try r.readUInt16LittleEndian("end")
            guard let type = BLEUUID(attBytes: r.readRest()) else { throw r.error("a type UUID has 2 or 16 bytes") }
            self = opcode == Opcode.readByTypeRequest
                ? .readByTypeRequest(start: start, end: end, type: type)
                : .readByGroupTypeRequest(start: start, end: end, type: type)
        case Opcode.readByTypeResponse:
            let length = Int(try r.readByte("length"))
            guard length >= 2, r.remaining > 0, r.remaining % length == 0 else {
                throw r.error("entries of \(length) bytes in \(r.remaining)")
            }
            var entries: [(handle: UInt16, value: [UInt8])] = []
            while r.remaining > 0 {
                entries.append((try r.readUInt16LittleEndian("handle"), try r.readBytes(length - 2, "value")))
            }
            self = .readByTypeResponse(entries)
        case Opcode.readByGroupTypeResponse:
            let length = Int(try r.readByte("length"))
            guard length >= 4, r.remaining > 0, r.remaining % length == 0 else {
                throw r.error("entries of \(length) bytes in \(r.remaining)")
            }
            var entries: [(handle: UInt16, groupEnd: UInt16, value: [UInt8])] = []
            while r.remaining > 0 {
                entries.append((
                    try r.readUInt16LittleEndian("handle"), try r.readUInt16LittleEndian("group end"),
                    try r.readBytes(length - 4, "value")))
            }
            self = .readByGroupTypeResponse(entries)
        case Opcode.readRequest:
            self = .readRequest(handle: try r.readUInt16LittleEndian("handle"))
        case Opcode.readResponse:
            self = .readResponse(r.readRest())
        case Opcode.readBlobRequest:
            self = .readBlobRequest(handle: try r.readUInt16LittleEndian("handle"), offset: try r.readUInt16LittleEndian("offset"))
        case Opcode.readBlobResponse:
            self = .readBlobResponse(r.readRest())
        case Opcode.writeRequest:
            self = .writeRequest(handle: try r.readUInt16LittleEndian("handle"), value: r.readRest())
        case Opcode.writeResponse:
            self = .writeResponse
        case Opcode.notification:
            self = .notification(handle: try r.readUInt16LittleEndian("handle"), value: r.readRest())
        case Opcode.indication:
            self = .indication(handle: try r.readUInt16LittleEndian("handle"), value: r.readRest())
        case Opcode.confirmation:
            self = .confirmation
        case Opcode.writeCommand:
            self = .writeCommand(handle: try r.readUInt16LittleEndian("handle"), value: r.readRest())
        default:
            self = .other(opcode: opcode, parameters: r.readRest())
        }
    }

    /// The PDU's bytes.
    package var encodedBytes: [UInt8] {
        var out: [UInt8] = [opcode]
        func u16(_ v: UInt16) { out += [UInt8(v & 0xFF), UInt8(v >> 8)] }
        switch self {
        case .errorResponse(let request, let handle, let error):
            out.append(request); u16(handle); out.append(error)
        case .exchangeMTURequest(let mtu), .exchangeMTUResponse(let mtu):
            u16(mtu)
        case .findInformationRequest(let start, let end):
            u16(start); u16(end)
        case .findInformationResponse(let entries):
            let short = entries.allSatisfy { $0.type.short != nil }
            out.append(short ? 1 : 2)
            for entry in entries {
                u16(entry.handle)
                out += short ? entry.type.attBytes : entry.type.bytes.reversed()
            }
        case .findByTypeValueRequest(let start, let end, let type, let value):
            u16(start); u16(end); u16(type); out += value
        case .findByTypeValueResponse(let entries):
            for entry in entries { u16(entry.handle); u16(entry.groupEnd) }
        case .readByTypeRequest(let start, let end, let type), .readByGroupTypeRequest(let start, let end, let type):
            u16(start); u16(end); out += type.attBytes
        case .readByTypeResponse(let entries):
            out.append(UInt8(truncatingIfNeeded: 2 + (entries.first?.value.count ?? 0)))
            for entry in entries { u16(entry.handle); out += entry.value }
        case .readByGroupTypeResponse(let entries):
            out.append(UInt8(truncatingIfNeeded: 4 + (entries.first?.value.count ?? 0)))
            for entry in entries { u16(entry.handle); u16(entry.groupEnd); out += entry.value }
        case .readRequest(let handle):
            u16(handle)
        case .readResponse(let value), .readBlobResponse(let value):
            out += value
        case .readBlobRequest(let handle, let offset):
            u16(handle); u16(offset)
        case .writeRequest(let handle, let value), .writeCommand(let handle, let value),
            .notification(let handle, let value), .indication(let handle, let value):
            u16(handle); out += value
        case .writeResponse, .confirmation:
            break
        case .other(_, let parameters):
            out += parameters
        }
        return out
    }

    /// Tuples are not `Hashable`; PDUs compare and hash by their bytes.
    package static func == (lhs: ATTPDU, rhs: ATTPDU) -> Bool { lhs.encodedBytes == rhs.encodedBytes }

    /// Hashes the PDU's bytes.
    package func hash(into hasher: inout Hasher) { hasher.combine(encodedBytes) }
}
