import NearbyWire

/// One HCI packet as it travels over an H4 transport (UART framing: a 1-byte packet indicator, then the packet).
package enum H4Packet: Sendable, Hashable {
    /// A command (indicator 0x01): 2-byte opcode, 1-byte parameter length, parameters.
    case command([UInt8])
    /// ACL data (indicator 0x02): 2-byte handle and flags, 2-byte length, data.
    case acl([UInt8])
    /// SCO data (indicator 0x03), ignored by this host.
    case sco([UInt8])
    /// An event (indicator 0x04): 1-byte code, 1-byte parameter length, parameters.
    case event([UInt8])
    /// ISO data (indicator 0x05), ignored by this host.
    case iso([UInt8])

    /// The bytes on the wire, indicator included.
    package var encoded: [UInt8] {
        switch self {
        case .command(let body): [0x01] + body
        case .acl(let body): [0x02] + body
        case .sco(let body): [0x03] + body
        case .event(let body): [0x04] + body
        case .iso(let body): [0x05] + body
        }
    }
}

/// Splits an H4 byte stream, delivered in arbitrary pieces, into packets.
///
/// A value-type state machine: ``append(_:)`` buffers bytes and ``next()`` returns the next complete packet. An
/// unknown packet indicator is a stream error (H4 has no way to resynchronise), reported by throwing.
/// ACL lengths up to 65535 are accepted (some controllers, and the Bumble emulator, never fragment towards the host).
package struct H4Deframer: Sendable {
    private var bytes = ByteAccumulator()

    /// Creates an empty deframer.
    package init() {}

    /// The number of buffered bytes that do not yet form a packet.
    package var bufferedByteCount: Int { bytes.count }

    /// Adds bytes read from the transport.
    package mutating func append(_ bytes: some Sequence<UInt8>) {
        self.bytes.append(bytes)
    }

    /// The next complete packet, or `nil` when more bytes are needed.
    /// - Throws: `NearbyError` `.malformedHCIPacket` for an unknown packet indicator.
    package mutating func next() throws -> H4Packet? {
        guard !bytes.isEmpty else { return nil }
        let indicator = bytes[0]
        let headerLength: Int
        switch indicator {
        case 0x01, 0x03: headerLength = 3
        case 0x02, 0x05: headerLength = 4
        case 0x04: headerLength = 2
        default:
            throw NearbyError(.malformedHCIPacket, "unknown H4 packet indicator 0x\(String(indicator, radix: 16))")
        }
        guard bytes.count >= 1 + headerLength else { return nil }
        let h = 1
        let payloadLength: Int
        switch indicator {
        case 0x01: payloadLength = Int(bytes[h + 2])
        case 0x02: payloadLength = Int(bytes[h + 2]) | Int(bytes[h + 3]) << 8
        case 0x03: payloadLength = Int(bytes[h + 2])
        case 0x04: payloadLength = Int(bytes[h + 1])
        default: payloadLength = (Int(bytes[h + 2]) | Int(bytes[h + 3]) << 8) & 0x3FFF
        }
        let total = headerLength + payloadLength
        guard bytes.count >= 1 + total else { return nil }
        let body = Array(bytes.bytes(at: h, length: total))
        bytes.consume(1 + total)
        switch indicator {
        case 0x01: return .command(body)
        case 0x02: return .acl(body)
        case 0x03: return .sco(body)
        case 0x04: return .event(body)
        default: return .iso(body)
        }
    }
}
