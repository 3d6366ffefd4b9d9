import Foundation
import SwiftProtobuf

extension NearbyError.Code {
    /// A packet of the BLE socket layer (introduction, data, acknowledgement, disconnection), an Android L2CAP
    /// command or a Weave packet was malformed or broke the protocol's order.
    public static let malformedBLESocketPacket = NearbyError.Code(rawValue: "malformedBLESocketPacket")
}

/// One packet of the BLE socket layer that Nearby Connections puts between a BLE data path (a Weave GATT socket or
/// an L2CAP channel) and its `[u32 length][frame]` stream.
///
/// Every packet starts with 3 bytes. Three zero bytes mark a control packet, followed by a serialized
/// `SocketControlFrame` (`Protocols/ble_frames.proto`); anything else is the service-ID hash (the first 3 bytes of
/// SHA-256 of the service ID) of a data packet, followed by a piece of the Nearby stream:
///
/// | Packet | Bytes |
/// |---|---|
/// | introduction (client's first) | `00 00 00` ‖ `08 01 12 07 0a 03 <hash> 10 02` |
/// | disconnection | `00 00 00` ‖ `08 02 1a 05 0a 03 <hash>` |
/// | acknowledgement | `00 00 00` ‖ `08 03 22 <n> 0a 03 <hash> 10 <varint size>` |
/// | data | `<hash>` ‖ bytes |
///
/// Sources: google/nearby `proto/mediums/ble_frames.proto`, `connections/implementation/mediums/ble/ble_packet.cc`
/// and the Apple `GNCMBleUtils.mm`. Readers follow the C++ reader: an introduction must say socket version 2 and
/// carry a 3-byte hash; every control frame must carry the sub-frame its type names.
package enum BleSocketPacket: Hashable, Sendable {
    /// The client's first packet: the service it wants.
    case introduction(serviceIDHash: [UInt8])
    /// Ends the socket.
    case disconnection(serviceIDHash: [UInt8])
    /// The receiver's answer to a data packet, with the size it received.
    case acknowledgement(serviceIDHash: [UInt8], receivedSize: Int32)
    /// A piece of the Nearby stream for the service whose hash prefixes it.
    case data(serviceIDHash: [UInt8], payload: [UInt8])

    /// The length of the service-ID hash and of the control marker.
    package static let hashLength = 3
    /// The prefix of every control packet.
    package static let controlMarker: [UInt8] = [0, 0, 0]
    /// The socket version current peers introduce themselves with (and the only one they accept).
    package static let socketVersion = 2

    /// The 3-byte service-ID hash that identifies `serviceID` on a BLE socket (SHA-256, first 3 bytes).
    package static func serviceIDHash(_ serviceID: String) -> [UInt8] {
        Array(SHA256Digest.hash(utf8: serviceID).prefix(hashLength))
    }

    /// The service-ID hash the packet carries.
    package var serviceIDHash: [UInt8] {
        switch self {
        case .introduction(let hash), .disconnection(let hash), .acknowledgement(let hash, _), .data(let hash, _):
            hash
        }
    }

    /// Whether this is a control packet (introduction, disconnection, acknowledgement).
    package var isControl: Bool {
        if case .data = self { return false }
        return true
    }

    /// Decodes one packet.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/malformedBLESocketPacket`` when the packet is shorter
    ///   than 3 bytes, a control frame does not parse, names an unknown type, lacks the sub-frame its type names or
    ///   a 3-byte hash, or introduces a socket version other than 2.
    package init(decoding bytes: some Collection<UInt8>) throws(NearbyError) {
        let bytes = Array(bytes)
        var reader = ByteReader(bytes, context: "BLE socket packet", code: .malformedBLESocketPacket)
        let prefix = try reader.readBytes(Self.hashLength, "service-ID hash")
        let rest = reader.readRest()
        guard prefix == Self.controlMarker else {
            self = .data(serviceIDHash: prefix, payload: rest)
            return
        }
        let frame: ProtoBleSocketControlFrame
        do {
            frame = try ProtoBleSocketControlFrame(serializedBytes: rest)
        } catch {
            throw reader.error("the control frame does not parse (\(error))")
        }
        switch frame.type {
        case .introduction:
            guard frame.hasIntroduction else { throw reader.error("an introduction without its frame") }
            let introduction = frame.introduction
            guard introduction.socketVersion.rawValue == Self.socketVersion else {
                throw reader.error("introduction with socket version \(introduction.socketVersion.rawValue), expected 2")
            }
            self = .introduction(serviceIDHash: try Self.checkedHash(Array(introduction.serviceIDHash), reader))
        case .disconnection:
            guard frame.hasDisconnection else { throw reader.error("a disconnection without its frame") }
            self = .disconnection(serviceIDHash: try Self.checkedHash(Array(frame.disconnection.serviceIDHash), reader))
        case .packetAcknowledgement:
            guard frame.hasPacketAcknowledgement else { throw reader.error("an acknowledgement without its frame") }
            let ack = frame.packetAcknowledgement
            self = .acknowledgement(
                serviceIDHash: try Self.checkedHash(Array(ack.serviceIDHash), reader), receivedSize: ack.receivedSize)
        default:
            throw reader.error("unknown control frame type \(frame.type.rawValue)")
        }
    }

    private static func checkedHash(_ hash: [UInt8], _ reader: ByteReader) throws(NearbyError) -> [UInt8] {
        guard hash.count == hashLength else {
            throw reader.error("a service-ID hash has \(hashLength) bytes, got \(hash.count)")
        }
        return hash
    }

    /// The packet's bytes. A data packet's hash is written as given (callers pass a real service-ID hash, which is
    /// never `00 00 00` in practice).
    package var encodedBytes: [UInt8] {
        var frame = ProtoBleSocketControlFrame()
        switch self {
        case .data(let hash, let payload):
            return hash + payload
        case .introduction(let hash):
            frame.type = .introduction
            frame.introduction.serviceIDHash = Data(hash)
            frame.introduction.socketVersion = .v2
        case .disconnection(let hash):
            frame.type = .disconnection
            frame.disconnection.serviceIDHash = Data(hash)
        case .acknowledgement(let hash, let size):
            frame.type = .packetAcknowledgement
            frame.packetAcknowledgement.serviceIDHash = Data(hash)
            frame.packetAcknowledgement.receivedSize = size
        }
        // Serializing a message with only set, known fields cannot fail.
        let body: [UInt8] = (try? frame.serializedBytes()) ?? []
        return Self.controlMarker + body
    }
}
