import NIOCore

/// Tells ``TCPEndpointChannel/close()`` when the channel's sending side is done.
///
/// The channel closes gracefully: finishing the outbound writer makes NIO send every frame still queued and then
/// shut down the socket's output (a FIN), which NIO reports as `ChannelEvent.outputClosed`. This handler completes
/// ``outputDone`` at that moment, or when the channel goes inactive or the handler is removed, whichever comes first,
/// so the channel can then be closed completely without dropping queued frames. Inbound data passes through untouched.
final class TCPOutputShutdownObserver: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer

    private let promise: EventLoopPromise<Void>
    private var isDone = false

    /// Completed once no more bytes will be sent on the channel.
    var outputDone: EventLoopFuture<Void> { promise.futureResult }

    /// Creates an observer for a channel on `eventLoop`.
    init(eventLoop: any EventLoop) {
        promise = eventLoop.makePromise(of: Void.self)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let channelEvent = event as? ChannelEvent, channelEvent == .outputClosed {
            markDone()
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        markDone()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        markDone()
    }

    /// Completes ``outputDone`` for an observer that never made it into a pipeline (setting the pipeline up
    /// failed, for example on a channel the peer had already closed), so its promise is never left pending.
    func abandon() {
        markDone()
    }

    private func markDone() {
        guard !isDone else { return }
        isDone = true
        promise.succeed(())
    }
}
