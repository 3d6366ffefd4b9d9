/// A command of the small protocol a Nearby BLE L2CAP channel starts with, before the socket layer
/// (``BleSocketPacket``) takes over.
///
/// A command is its 1-byte code, or the code, a big-endian `UInt16` length and that many bytes when it carries data
/// (only the advertisement request and response do). The client of a data connection sends
/// ``Code/requestDataConnection`` (`03`); the server answers ``Code/responseDataConnectionReady`` (`17`), which
/// shipped Android expects within 1 s, and then the client introduces itself.
///
/// Sources: google/nearby `connections/implementation/mediums/ble/ble_l2cap_packet.{h,cc}` (codes and the length
/// field) and the Apple `GNCMBleUtils.mm` (a command without data is its code alone).
package struct BleL2CAPCommand: Hashable, Sendable {
    /// A command code.
    package struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The byte on the wire.
        package var rawValue: UInt8
        /// Creates a code from its byte.
        package init(rawValue: UInt8) { self.rawValue = rawValue }

        /// Asks the server for its advertisement for a service-ID hash (data: the hash).
        package static let requestAdvertisement = Code(rawValue: 1)
        /// Ends a run of advertisement requests.
        package static let requestAdvertisementFinish = Code(rawValue: 2)
        /// Asks the server to turn the channel into a data connection.
        package static let requestDataConnection = Code(rawValue: 3)
        /// The server's advertisement (data: the advertisement; may be empty).
        package static let responseAdvertisement = Code(rawValue: 21)
        /// The server does not advertise the requested service.
        package static let responseServiceIDNotFound = Code(rawValue: 22)
        /// The server is ready for the socket layer.
        package static let responseDataConnectionReady = Code(rawValue: 23)
        /// The server refuses the data connection.
        package static let responseDataConnectionFailure = Code(rawValue: 24)

        static let known: Set<UInt8> = [1, 2, 3, 21, 22, 23, 24]

        /// The code's number.
        package var description: String { "\(rawValue)" }
    }

    /// The command.
    package var code: Code
    /// The command's data, `nil` for a command without data.
    package var data: [UInt8]?

    /// Creates a command.
    package init(_ code: Code, data: [UInt8]? = nil) {
        self.code = code
        self.data = data
    }

    /// Decodes one command from a whole packet.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/malformedBLESocketPacket`` for an empty packet, an
    ///   unknown code, a length field cut short, or a length that does not match the bytes after it.
    package init(decoding bytes: some Collection<UInt8>) throws(NearbyError) {
        var reader = ByteReader(bytes, context: "BLE L2CAP command", code: .malformedBLESocketPacket)
        let code = Code(rawValue: try reader.readByte("command"))
        guard Code.known.contains(code.rawValue) else { throw reader.error("unknown command \(code)") }
        self.code = code
        if reader.remaining == 0 {
            self.data = nil
            return
        }
        let length = Int(try reader.readUInt16BigEndian("data length"))
        guard length == reader.remaining else {
            throw reader.error("the data length says \(length) bytes, \(reader.remaining) follow")
        }
        self.data = reader.readRest()
    }

    /// Whether `bytes` could be a command: shipped peers tell commands from socket-layer packets this way (a
    /// socket packet starts with 3 bytes of a hash or zeros, a command packet is 1 byte or 3 + its length).
    package static func isCommand(_ bytes: [UInt8]) -> Bool {
        (try? BleL2CAPCommand(decoding: bytes)) != nil
    }

    /// The command's bytes.
    ///
    /// - Precondition: `data` has at most 65,535 bytes.
    package var encodedBytes: [UInt8] {
        guard let data else { return [code.rawValue] }
        precondition(data.count <= Int(UInt16.max), "a BLE L2CAP command carries at most 65535 bytes")
        return [code.rawValue, UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
    }
}
