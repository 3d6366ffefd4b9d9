import NearbyWire

/// An HCI ACL data packet header and its fragmentation and reassembly.
package struct ACLPacket: Sendable, Hashable {
    /// Packet boundary flag values.
    package enum Boundary: UInt8, Sendable {
        /// First fragment, non-flushable (host to controller on LE).
        case firstNonFlushable = 0
        /// Continuing fragment.
        case continuing = 1
        /// First fragment, flushable (what controllers send to hosts).
        case firstFlushable = 2
        /// A complete, automatically flushable L2CAP PDU.
        case complete = 3
    }

    /// Connection handle (12 bits).
    package var handle: UInt16
    /// Packet boundary flag.
    package var boundary: Boundary
    /// The data (a fragment of an L2CAP PDU).
    package var data: [UInt8]

    /// Creates a packet.
    package init(handle: UInt16, boundary: Boundary, data: [UInt8]) {
        self.handle = handle
        self.boundary = boundary
        self.data = data
    }

    /// Decodes an ACL packet (no H4 indicator).
    /// - Throws: `.malformedHCIPacket` when the header is short or the length disagrees with the packet.
    package init(decoding packet: [UInt8]) throws {
        guard packet.count >= 4 else { throw NearbyError(.malformedHCIPacket, "ACL packet shorter than its header") }
        let word = UInt16(packet[0]) | UInt16(packet[1]) << 8
        let length = Int(packet[2]) | Int(packet[3]) << 8
        guard length == packet.count - 4 else {
            throw NearbyError(.malformedHCIPacket, "ACL packet says \(length) data bytes, has \(packet.count - 4)")
        }
        self.handle = word & 0x0FFF
        self.boundary = Boundary(rawValue: UInt8((word >> 12) & 0x3))!
        self.data = Array(packet[4...])
    }

    /// The packet without the H4 indicator.
    package var encoded: [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendLE16((handle & 0x0FFF) | UInt16(boundary.rawValue) << 12)
        bytes.appendLE16(UInt16(data.count))
        return bytes + data
    }

    /// Splits one L2CAP PDU into ACL packets of at most `maxDataLength` data bytes (the controller's LE ACL buffer
    /// size): the first non-flushable, the rest continuing.
    package static func fragments(handle: UInt16, pdu: [UInt8], maxDataLength: Int) -> [ACLPacket] {
        let size = max(1, maxDataLength)
        var packets: [ACLPacket] = []
        var offset = 0
        repeat {
            let end = min(pdu.count, offset + size)
            packets.append(
                ACLPacket(handle: handle, boundary: offset == 0 ? .firstNonFlushable : .continuing,
                          data: Array(pdu[offset..<end])))
            offset = end
        } while offset < pdu.count
        return packets
    }
}

/// Reassembles L2CAP PDUs (basic header: 2-byte length, 2-byte CID) from ACL fragments of one connection.
package struct L2CAPReassembler: Sendable {
    private var pending: [UInt8] = []
    private var inProgress = false

    /// Creates an empty reassembler.
    package init() {}

    /// Feeds one ACL packet; returns the complete PDU (header included) when this fragment finishes one.
    /// - Throws: `.malformedL2CAPPacket` for a continuation with nothing to continue, or a PDU longer than its
    ///   header says. The reassembler is reset.
    package mutating func append(_ packet: ACLPacket) throws -> [UInt8]? {
        if packet.boundary == .continuing {
            guard inProgress else {
                throw NearbyError(.malformedL2CAPPacket, "ACL continuation fragment without a start")
            }
            pending += packet.data
        } else {
            pending = packet.data  // a new start drops an unfinished PDU
            inProgress = true
        }
        guard pending.count >= 2 else { return nil }
        let total = (Int(pending[0]) | Int(pending[1]) << 8) + 4
        guard pending.count >= total else { return nil }
        let pdu = pending
        pending = []
        inProgress = false
        guard pdu.count == total else {
            throw NearbyError(.malformedL2CAPPacket, "L2CAP PDU longer than its length field (\(total) bytes)")
        }
        return pdu
    }
}
