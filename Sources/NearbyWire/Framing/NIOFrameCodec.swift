import NIOCore

/// A SwiftNIO decoder that turns a byte stream into frame bodies, each a `[UInt8]` without the 4-byte length
/// prefix.
///
/// Rules are those of ``LengthPrefixFraming``: a negative length or one above
/// ``LengthPrefixFraming/maxFrameLength`` throws ``NearbyError/Code-swift.struct/invalidFraming`` as soon as the
/// prefix arrives, and a stream that ends inside a frame throws the same code, so the pipeline can drop the endpoint.
package struct LengthPrefixedFrameDecoder: ByteToMessageDecoder, Sendable {
    /// Each decoded frame body.
    package typealias InboundOut = [UInt8]

    /// Creates a decoder.
    package init() {}

    /// Decodes one frame if a whole one is buffered.
    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let prefix = buffer.getInteger(at: buffer.readerIndex, endianness: .big, as: Int32.self) else {
            return .needMoreData
        }
        let length = Int(prefix)
        try LengthPrefixFraming.checkLength(length)
        guard buffer.readableBytes >= LengthPrefixFraming.prefixLength + length else {
            return .needMoreData
        }
        buffer.moveReaderIndex(forwardBy: LengthPrefixFraming.prefixLength)
        // Frames leave the event loop for Swift concurrency. A `ByteBuffer` slice would share storage with NIO's
        // pooled receive buffer, which the event loop reuses once it sees itself as the only owner; that hand-off
        // goes through a reference count ThreadSanitizer cannot see, so it reports a race. Copying the body out
        // here, on the loop, keeps the pooled buffer on the event loop's thread, and is the one copy the reader
        // needs anyway.
        let body = buffer.readBytes(length: length)!
        context.fireChannelRead(Self.wrapInboundOut(body))
        return .continue
    }

    /// Decodes what is left when the stream ends; leftover bytes mean a truncated frame.
    package mutating func decodeLast(
        context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 {
            let leftover = buffer.readableBytes
            buffer.moveReaderIndex(forwardBy: leftover)
            throw NearbyError(.invalidFraming, "stream ended inside a frame (\(leftover) bytes left over)")
        }
        return .needMoreData
    }
}

/// A SwiftNIO encoder that writes each outbound `ByteBuffer` as one frame: its length as 4 big-endian bytes, then
/// the bytes. Bodies longer than ``LengthPrefixFraming/maxFrameLength`` are refused with
/// ``NearbyError/Code-swift.struct/invalidFraming``.
package struct LengthPrefixedFrameEncoder: MessageToByteEncoder, Sendable {
    /// A frame body.
    package typealias OutboundIn = ByteBuffer

    /// Creates an encoder.
    package init() {}

    /// Writes the prefix and the body.
    package func encode(data: ByteBuffer, out: inout ByteBuffer) throws {
        try LengthPrefixFraming.checkLength(data.readableBytes)
        out.reserveCapacity(minimumWritableBytes: LengthPrefixFraming.prefixLength + data.readableBytes)
        out.writeInteger(Int32(data.readableBytes), endianness: .big)
        out.writeImmutableBuffer(data)
    }
}

/// A SwiftNIO outbound handler that writes each outbound `ByteBuffer` as one frame without copying the body: the
/// 4-byte big-endian length goes out as its own small buffer, then the body buffer itself (NIO sends both with one
/// vectored write when they are flushed together). ``LengthPrefixedFrameEncoder`` produces the same bytes but
/// copies every body into a new buffer first. Bodies longer than ``LengthPrefixFraming/maxFrameLength`` fail the
/// write with ``NearbyError/Code-swift.struct/invalidFraming`` and nothing is written.
package final class LengthPrefixedFrameWriter: ChannelOutboundHandler, Sendable {
    /// A frame body.
    package typealias OutboundIn = ByteBuffer
    /// The prefix, then the body.
    package typealias OutboundOut = ByteBuffer

    /// Creates the handler.
    package init() {}

    /// Writes the prefix, then the body; the write's promise completes with the body's.
    package func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let body = unwrapOutboundIn(data)
        do {
            try LengthPrefixFraming.checkLength(body.readableBytes)
        } catch {
            promise?.fail(error)
            return
        }
        var prefix = context.channel.allocator.buffer(capacity: LengthPrefixFraming.prefixLength)
        prefix.writeInteger(Int32(body.readableBytes), endianness: .big)
        context.write(wrapOutboundOut(prefix), promise: nil)
        context.write(wrapOutboundOut(body), promise: promise)
    }
}
