/// The framing shipped Android puts on every packet of a Nearby BLE L2CAP channel: a big-endian `UInt32` length,
/// then that many bytes (a ``BleL2CAPCommand`` or a ``BleSocketPacket``).
///
/// L2CAP delivers SDUs, but peers coalesce and split writes as they like, so the reader treats the channel as a
/// byte stream. Sources: the Apple `GNCBLEL2CAPConnection.m` (`PrefixLengthData`, a 5 MB cap on the declared
/// length, a zero length rejected); google/nearby issue 4415 and the Bada project's issues 214/217 (phones reject
/// the unframed form the open-source C++ core writes).
package struct BleL2CAPFraming: Sendable {
    /// The largest packet a reader accepts (the Apple reader's cap).
    package static let maxPacketLength = 5 * 1024 * 1024

    private var buffer = ByteAccumulator()
    private let maxLength: Int

    /// A reader accepting packets of up to `maxLength` bytes.
    package init(maxLength: Int = BleL2CAPFraming.maxPacketLength) {
        self.maxLength = maxLength
    }

    /// The packet with its length prefix.
    package static func frame(_ packet: [UInt8]) -> [UInt8] {
        let n = UInt32(truncatingIfNeeded: packet.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + packet
    }

    /// Adds received bytes.
    package mutating func append(_ bytes: [UInt8]) {
        buffer.append(bytes)
    }

    /// Whether no partial packet is buffered.
    package var isAtPacketBoundary: Bool { buffer.isEmpty }

    /// The next whole packet, or `nil` until more bytes arrive.
    ///
    /// - Throws: ``NearbyError`` with code ``NearbyError/Code/malformedBLESocketPacket`` for a zero length or one
    ///   above the maximum.
    package mutating func nextPacket() throws(NearbyError) -> [UInt8]? {
        guard buffer.count >= 4 else { return nil }
        let length = Int(buffer[0]) << 24 | Int(buffer[1]) << 16 | Int(buffer[2]) << 8 | Int(buffer[3])
        guard length > 0, length <= maxLength else {
            throw NearbyError(
                .malformedBLESocketPacket, "BLE L2CAP packet: declared length \(length) is outside 1…\(maxLength)")
        }
        guard buffer.count >= 4 + length else { return nil }
        let packet = Array(buffer.bytes(at: 4, length: length))
        buffer.consume(4 + length)
        return packet
    }
}
