/// One packet of Weave, the protocol Nearby's GATT socket speaks over two characteristics of the 0xFEF3 service.
///
/// Every packet starts with a 1-byte header:
///
/// * control, `1 CCC NNNN`: a 3-bit packet counter `CCC` and a command `NNNN` — 0 connection request
///   {min version, max version, max packet size: big-endian `UInt16`s; up to 13 bytes of data}, 1 connection confirm
///   {version, packet size; up to 15 bytes of data}, 2 error (header only). A control packet has at most 20 bytes.
/// * data, `0 CCC F L 00`: `F` marks the first and `L` the last packet of a message (both for a one-packet message);
///   the rest of the packet is the message's next bytes.
///
/// Source: google/nearby `internal/platform/implementation/apple/Mediums/BLE/Sockets/Source/Shared/GNSWeavePacket.m`.
/// The reader follows it: a connection request needs 6 bytes after the header, a confirm 4, longer control packets
/// and unknown commands are rejected.
package struct WeavePacket: Hashable, Sendable {
    /// What the packet is.
    package enum Kind: Hashable, Sendable {
        /// The client's first packet.
        case connectionRequest(minVersion: UInt16, maxVersion: UInt16, maxPacketSize: UInt16, data: [UInt8])
        /// The server's first packet: the version and packet size of this connection.
        case connectionConfirm(version: UInt16, packetSize: UInt16, data: [UInt8])
        /// Ends the connection (a protocol error, or a server closing the socket).
        case error
        /// A piece of a message.
        case data(isFirst: Bool, isLast: Bool, payload: [UInt8])
    }

    /// The Weave protocol version (the only one).
    package static let version: UInt16 = 1
    /// The largest control packet.
    package static let maxControlPacketSize = 20
    /// The smallest packet size a connection may use (the first packets always fit it).
    package static let minPacketSize = 20
    /// The largest packet size (an attribute value is at most 512 bytes; the Apple implementation says 509).
    package static let maxPacketSize = 509
    /// The most data a connection request carries.
    package static let maxRequestDataSize = 13
    /// The counter wraps after 8 packets.
    package static let counterModulus: UInt8 = 8

    /// The 3-bit packet counter (0…7).
    package var counter: UInt8
    /// The packet's kind and contents.
    package var kind: Kind

    /// Creates a packet; `counter` is taken modulo 8.
    package init(counter: UInt8, _ kind: Kind) {
        self.counter = counter % Self.counterModulus
        self.kind = kind
    }

    /// Decodes one packet.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/malformedBLESocketPacket`` for an empty packet, a
    ///   control packet above 20 bytes, an unknown command, or a request or confirm cut short.
    package init(decoding bytes: some Collection<UInt8>) throws(NearbyError) {
        var reader = ByteReader(bytes, context: "Weave packet", code: .malformedBLESocketPacket)
        let header = try reader.readByte("header")
        counter = header >> 4 & 0x07
        guard header & 0x80 != 0 else {
            kind = .data(isFirst: header & 0x08 != 0, isLast: header & 0x04 != 0, payload: reader.readRest())
            return
        }
        guard reader.bytes.count <= Self.maxControlPacketSize else {
            throw reader.error("a control packet has at most \(Self.maxControlPacketSize) bytes, got \(reader.bytes.count)")
        }
        switch header & 0x0F {
        case 0:
            let minVersion = try reader.readUInt16BigEndian("minimum version")
            let maxVersion = try reader.readUInt16BigEndian("maximum version")
            let size = try reader.readUInt16BigEndian("maximum packet size")
            kind = .connectionRequest(minVersion: minVersion, maxVersion: maxVersion, maxPacketSize: size, data: reader.readRest())
        case 1:
            let version = try reader.readUInt16BigEndian("version")
            let size = try reader.readUInt16BigEndian("packet size")
            kind = .connectionConfirm(version: version, packetSize: size, data: reader.readRest())
        case 2:
            kind = .error
        default:
            throw reader.error("unknown control command \(header & 0x0F)")
        }
    }

    /// The packet's bytes.
    package var encodedBytes: [UInt8] {
        let count = counter % Self.counterModulus
        switch kind {
        case .connectionRequest(let minVersion, let maxVersion, let size, let data):
            return [0x80 | count << 4 | 0] + Self.bigEndian(minVersion) + Self.bigEndian(maxVersion) + Self.bigEndian(size) + data
        case .connectionConfirm(let version, let size, let data):
            return [0x80 | count << 4 | 1] + Self.bigEndian(version) + Self.bigEndian(size) + data
        case .error:
            return [0x80 | count << 4 | 2]
        case .data(let first, let last, let payload):
            return [count << 4 | (first ? 0x08 : 0) | (last ? 0x04 : 0)] + payload
        }
    }

    private static func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
}
