import NIOCore

/// A SwiftNIO inbound handler that turns a byte stream into frame bodies, each a `[UInt8]` without the 4-byte
/// length prefix.
///
/// Rules are those of ``LengthPrefixFraming``: a negative length or one above
/// ``LengthPrefixFraming/maxFrameLength`` fails the stream with ``NearbyError/Code-swift.struct/invalidFraming`` as
/// soon as the prefix arrives, and a stream that ends inside a frame fails with the same code, so the pipeline can
/// drop the endpoint. After such an error every later byte is dropped.
///
/// Each body byte is copied once, from NIO's receive buffer straight into the body that leaves the event loop. A
/// frame that arrives whole in one read is read out of it; a frame split across reads is built up piece by piece
/// in a body reserved at its announced length. (NIO's `ByteToMessageHandler` would first merge every read that
/// follows a split frame into its own buffer, a second copy of most received bytes.) Frames leave the event loop
/// for Swift concurrency as arrays rather than `ByteBuffer` slices: a slice would share storage with NIO's pooled
/// receive buffer, which the event loop reuses once it sees itself as the only owner; that hand-off goes through a
/// reference count ThreadSanitizer cannot see, so it reports a race.
///
/// Used on one channel's event loop only, like every NIO handler.
package final class LengthPrefixedFrameReader: ChannelInboundHandler {
    /// Received bytes.
    package typealias InboundIn = ByteBuffer
    /// Each decoded frame body.
    package typealias InboundOut = [UInt8]

    /// The prefix bytes of the next frame received so far (fewer than 4).
    private var prefix: [UInt8] = []
    /// The body under construction and the length its prefix announced.
    private var partial: (body: [UInt8], length: Int)?
    /// A framing error was reported; the rest of the stream is dropped.
    private var failed = false

    /// Creates the handler.
    package init() {}

    /// Cuts every whole frame out of `data` and keeps the start of a split one.
    package func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        var buffer = unwrapInboundIn(data)
        do {
            while buffer.readableBytes > 0 {
                if var pending = partial {
                    partial = nil
                    let take = min(pending.length - pending.body.count, buffer.readableBytes)
                    buffer.readWithUnsafeReadableBytes { bytes in
                        pending.body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes.prefix(take)))
                        return take
                    }
                    if pending.body.count == pending.length {
                        context.fireChannelRead(wrapInboundOut(pending.body))
                    } else {
                        partial = pending
                    }
                    continue
                }
                let length: Int
                if prefix.isEmpty, let value = buffer.readInteger(endianness: .big, as: Int32.self) {
                    length = Int(value)
                    try LengthPrefixFraming.checkLength(length)
                } else {
                    while prefix.count < LengthPrefixFraming.prefixLength, let byte = buffer.readInteger(as: UInt8.self) {
                        prefix.append(byte)
                    }
                    guard prefix.count == LengthPrefixFraming.prefixLength else { break }
                    length = try LengthPrefixFraming.decodeLength(prefix)
                    prefix.removeAll(keepingCapacity: true)
                }
                if let body = buffer.readBytes(length: length) {
                    context.fireChannelRead(wrapInboundOut(body))
                } else {
                    var body: [UInt8] = []
                    body.reserveCapacity(length)
                    partial = (body, length)
                }
            }
        } catch {
            fail(context: context, error)
        }
    }

    /// Reports a stream that ends inside a frame when the peer shuts its output down, then passes the event on.
    package func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .some(ChannelEvent.inputClosed) = event as? ChannelEvent {
            checkEndOfStream(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Reports a stream that ends inside a frame when the connection closes, then passes the event on.
    package func channelInactive(context: ChannelHandlerContext) {
        checkEndOfStream(context: context)
        context.fireChannelInactive()
    }

    private func checkEndOfStream(context: ChannelHandlerContext) {
        let leftover = prefix.count + (partial.map { LengthPrefixFraming.prefixLength + $0.body.count } ?? 0)
        guard !failed, leftover > 0 else { return }
        fail(context: context, NearbyError(.invalidFraming, "stream ended inside a frame (\(leftover) bytes left over)"))
    }

    private func fail(context: ChannelHandlerContext, _ error: any Error) {
        failed = true
        prefix = []
        partial = nil
        context.fireErrorCaught(error)
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
