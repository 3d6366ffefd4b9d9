import NIOCore

/// Passes outbound buffers on one at a time, each after the previous one reached the kernel, so that every
/// buffer leaves in a `write(2)` of its own.
///
/// The HCI user-channel socket takes exactly one packet per write. When writes queue up while the socket is busy,
/// NIO would gather them into one `writev`, which the kernel would take as a single (malformed) packet. The HCI
/// transport always flushes each write, so every buffer this handler holds counts as flushed.
final class OnePacketPerWriteHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var queued = CircularBuffer<(buffer: ByteBuffer, promise: EventLoopPromise<Void>?)>()
    private var writing = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        queued.append((unwrapOutboundIn(data), promise))
    }

    func flush(context: ChannelHandlerContext) {
        writeNext(context: context)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        if mode != .input {
            while let entry = queued.popFirst() { entry.promise?.fail(ChannelError.ioOnClosedChannel) }
        }
        context.close(mode: mode, promise: promise)
    }

    /// Fails the writes still queued, so that no promise is left pending when the handler goes away.
    func handlerRemoved(context: ChannelHandlerContext) {
        while let entry = queued.popFirst() { entry.promise?.fail(ChannelError.ioOnClosedChannel) }
    }

    private func writeNext(context: ChannelHandlerContext) {
        guard !writing, let entry = queued.popFirst() else { return }
        writing = true
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(wrapOutboundOut(entry.buffer), promise: written)
        written.futureResult.assumeIsolated().whenComplete { result in
            self.writing = false
            entry.promise?.completeWith(result)
            self.writeNext(context: context)
        }
    }
}
