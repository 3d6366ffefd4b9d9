import NearbyWire

/// Fixed L2CAP channel IDs and limits on LE.
package enum L2CAPConstants {
    /// The LE signaling channel.
    package static let leSignalingCID: UInt16 = 0x0005
    /// The first dynamically allocated CID on LE.
    package static let firstDynamicCID: UInt16 = 0x0040
    /// The last dynamically allocated CID on LE.
    package static let lastDynamicCID: UInt16 = 0x007F
    /// The smallest MTU and MPS an LE credit-based channel may use.
    package static let minimumMTU: UInt16 = 23
    /// The largest MPS an LE credit-based channel may use.
    package static let maximumMPS: UInt16 = 65_533
    /// The most credits a channel may hold.
    package static let maximumCredits: UInt32 = 65_535
}

/// Results of an LE Credit Based Connection Response.
package enum L2CAPConnectionResult {
    /// Connection successful.
    package static let success: UInt16 = 0x0000
    /// LE_PSM not supported.
    package static let psmNotSupported: UInt16 = 0x0002
    /// No resources available.
    package static let noResources: UInt16 = 0x0004
    /// Unacceptable parameters.
    package static let unacceptableParameters: UInt16 = 0x000B
    /// Invalid source CID.
    package static let invalidSourceCID: UInt16 = 0x0009
    /// Source CID already allocated.
    package static let sourceCIDAlreadyAllocated: UInt16 = 0x000A
}

/// One L2CAP LE signaling command (the payload of a C-frame on CID 0x0005).
package enum L2CAPSignal: Sendable, Hashable {
    /// Command Reject (0x01): reason and optional data.
    case commandReject(identifier: UInt8, reason: UInt16, data: [UInt8])
    /// Disconnection Request (0x06).
    case disconnectionRequest(identifier: UInt8, destinationCID: UInt16, sourceCID: UInt16)
    /// Disconnection Response (0x07).
    case disconnectionResponse(identifier: UInt8, destinationCID: UInt16, sourceCID: UInt16)
    /// Connection Parameter Update Request (0x12), answered with a rejection by this host.
    case connectionParameterUpdateRequest(identifier: UInt8, parameters: [UInt8])
    /// Connection Parameter Update Response (0x13).
    case connectionParameterUpdateResponse(identifier: UInt8, result: UInt16)
    /// LE Credit Based Connection Request (0x14).
    case leCreditConnectionRequest(identifier: UInt8, psm: UInt16, sourceCID: UInt16, mtu: UInt16, mps: UInt16, credits: UInt16)
    /// LE Credit Based Connection Response (0x15).
    case leCreditConnectionResponse(identifier: UInt8, destinationCID: UInt16, mtu: UInt16, mps: UInt16, credits: UInt16, result: UInt16)
    /// LE Flow Control Credit (0x16).
    case flowControlCredit(identifier: UInt8, cid: UInt16, credits: UInt16)
    /// A command this host does not implement; answered with Command Reject "not understood".
    case unknown(code: UInt8, identifier: UInt8, data: [UInt8])

    /// Command Reject reasons.
    package enum RejectReason {
        /// Command not understood.
        package static let notUnderstood: UInt16 = 0x0000
        /// Signaling MTU exceeded.
        package static let mtuExceeded: UInt16 = 0x0001
        /// Invalid CID in request.
        package static let invalidCID: UInt16 = 0x0002
    }

    /// The command's identifier.
    package var identifier: UInt8 {
        switch self {
        case .commandReject(let id, _, _), .disconnectionRequest(let id, _, _), .disconnectionResponse(let id, _, _),
            .connectionParameterUpdateRequest(let id, _), .connectionParameterUpdateResponse(let id, _),
            .leCreditConnectionRequest(let id, _, _, _, _, _), .leCreditConnectionResponse(let id, _, _, _, _, _),
            .flowControlCredit(let id, _, _), .unknown(_, let id, _):
            id
        }
    }

    /// Decodes one signaling command (code, identifier, 2-byte length, data).
    /// - Throws: `.malformedL2CAPPacket` when the command is truncated, its length field disagrees with the packet,
    ///   its identifier is 0, or a known command has the wrong length.
    package init(decoding bytes: [UInt8]) throws {
        var r = LEByteReader(bytes, context: "L2CAP signaling command", code: .malformedL2CAPPacket)
        let code = try r.u8("code")
        let identifier = try r.u8("identifier")
        let length = Int(try r.u16("length"))
        guard length == r.remaining else { throw r.error("length field \(length), but \(r.remaining) data bytes") }
        guard identifier != 0 else { throw r.error("identifier 0 is invalid") }
        func expect(_ n: Int) throws {
            guard length == n else { throw r.error("command 0x\(String(code, radix: 16)) needs \(n) data bytes, has \(length)") }
        }
        switch code {
        case 0x01:
            guard length >= 2 else { throw r.error("command reject without a reason") }
            self = .commandReject(identifier: identifier, reason: try r.u16("reason"), data: r.rest())
        case 0x06:
            try expect(4)
            self = .disconnectionRequest(identifier: identifier, destinationCID: try r.u16("dcid"), sourceCID: try r.u16("scid"))
        case 0x07:
            try expect(4)
            self = .disconnectionResponse(identifier: identifier, destinationCID: try r.u16("dcid"), sourceCID: try r.u16("scid"))
        case 0x12:
            try expect(8)
            self = .connectionParameterUpdateRequest(identifier: identifier, parameters: r.rest())
        case 0x13:
            try expect(2)
            self = .connectionParameterUpdateResponse(identifier: identifier, result: try r.u16("result"))
        case 0x14:
            try expect(10)
            self = .leCreditConnectionRequest(
                identifier: identifier, psm: try r.u16("psm"), sourceCID: try r.u16("scid"), mtu: try r.u16("mtu"),
                mps: try r.u16("mps"), credits: try r.u16("credits"))
        case 0x15:
            try expect(10)
            self = .leCreditConnectionResponse(
                identifier: identifier, destinationCID: try r.u16("dcid"), mtu: try r.u16("mtu"), mps: try r.u16("mps"),
                credits: try r.u16("credits"), result: try r.u16("result"))
        case 0x16:
            try expect(4)
            self = .flowControlCredit(identifier: identifier, cid: try r.u16("cid"), credits: try r.u16("credits"))
        default:
            self = .unknown(code: code, identifier: identifier, data: r.rest())
        }
    }

    /// The encoded command (code, identifier, length, data), to be sent in a C-frame on CID 0x0005.
    package var encoded: [UInt8] {
        var d: [UInt8] = []
        let code: UInt8
        switch self {
        case .commandReject(_, let reason, let data):
            code = 0x01
            d.appendLE16(reason)
            d += data
        case .disconnectionRequest(_, let dcid, let scid):
            code = 0x06
            d.appendLE16(dcid)
            d.appendLE16(scid)
        case .disconnectionResponse(_, let dcid, let scid):
            code = 0x07
            d.appendLE16(dcid)
            d.appendLE16(scid)
        case .connectionParameterUpdateRequest(_, let parameters):
            code = 0x12
            d += parameters
        case .connectionParameterUpdateResponse(_, let result):
            code = 0x13
            d.appendLE16(result)
        case .leCreditConnectionRequest(_, let psm, let scid, let mtu, let mps, let credits):
            code = 0x14
            for v in [psm, scid, mtu, mps, credits] { d.appendLE16(v) }
        case .leCreditConnectionResponse(_, let dcid, let mtu, let mps, let credits, let result):
            code = 0x15
            for v in [dcid, mtu, mps, credits, result] { d.appendLE16(v) }
        case .flowControlCredit(_, let cid, let credits):
            code = 0x16
            d.appendLE16(cid)
            d.appendLE16(credits)
        case .unknown(let c, _, let data):
            code = c
            d = data
        }
        var bytes: [UInt8] = [code, identifier]
        bytes.appendLE16(UInt16(d.count))
        return bytes + d
    }
}

/// L2CAP basic-frame helpers.
package enum L2CAPFrame {
    /// Prefixes `payload` with the basic L2CAP header (length, CID).
    package static func encode(cid: UInt16, payload: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendLE16(UInt16(payload.count))
        bytes.appendLE16(cid)
        return bytes + payload
    }

    /// Splits a complete PDU into its CID and payload.
    /// - Throws: `.malformedL2CAPPacket` when the PDU is shorter than the header or its length disagrees.
    package static func decode(_ pdu: [UInt8]) throws -> (cid: UInt16, payload: [UInt8]) {
        guard pdu.count >= 4 else { throw NearbyError(.malformedL2CAPPacket, "L2CAP PDU shorter than its header") }
        let length = Int(pdu[0]) | Int(pdu[1]) << 8
        guard length == pdu.count - 4 else {
            throw NearbyError(.malformedL2CAPPacket, "L2CAP length \(length) but \(pdu.count - 4) payload bytes")
        }
        return (UInt16(pdu[2]) | UInt16(pdu[3]) << 8, Array(pdu[4...]))
    }
}
