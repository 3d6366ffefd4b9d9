import NIOCore
import NearbyWire

/// Splits the H4 byte stream from a controller into whole packets, as the first handler of an HCI transport's
/// NIO pipeline.
///
/// The framing rules live in ``H4Deframer``; this decoder feeds it the bytes NIO reads and passes on each complete
/// packet. An unknown packet indicator is thrown as `NearbyError` `.malformedHCIPacket` (H4 cannot
/// resynchronise, so the transport then ends). Bytes of an incomplete packet left when the stream ends are dropped.
package struct H4PacketDecoder: ByteToMessageDecoder {
    package typealias InboundOut = H4Packet

    private var deframer = H4Deframer()

    /// Creates a decoder with nothing buffered.
    package init() {}

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard buffer.readableBytes > 0 else { return .needMoreData }
        deframer.append(buffer.readableBytesView)
        buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        while let packet = try deframer.next() {
            context.fireChannelRead(wrapInboundOut(packet))
        }
        return .needMoreData
    }

    package mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        _ = try decode(context: context, buffer: &buffer)
        return .needMoreData
    }
}
