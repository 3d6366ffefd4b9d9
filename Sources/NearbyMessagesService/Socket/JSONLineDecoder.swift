import NIOCore
import NearbyWire

/// Splits a byte stream into lines (without the `\n`, and without a `\r` before it), each copied into storage of its
/// own so NIO's pooled receive buffer never leaves the event loop. Empty lines are skipped; a line longer than
/// ``maximumLength`` is an error (`NearbyError` `.invalidFraming`), which closes the connection.
struct JSONLineDecoder: ByteToMessageDecoder {
    typealias InboundOut = [UInt8]

    /// The longest line accepted, in bytes.
    let maximumLength: Int

    init(maximumLength: Int = ServiceCodec.maximumLineLength) {
        self.maximumLength = maximumLength
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > maximumLength {
                throw NearbyError(.invalidFraming, "a line is longer than \(maximumLength) bytes")
            }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        guard length <= maximumLength else {
            throw NearbyError(.invalidFraming, "a line is longer than \(maximumLength) bytes")
        }
        var line = buffer.readBytes(length: length) ?? []
        buffer.moveReaderIndex(forwardBy: 1)
        if line.last == UInt8(ascii: "\r") { line.removeLast() }
        if !line.isEmpty { context.fireChannelRead(wrapInboundOut(line)) }
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0, let rest = buffer.readBytes(length: buffer.readableBytes) {
            context.fireChannelRead(wrapInboundOut(rest))  // a last line without its newline
        }
        return .needMoreData
    }
}
