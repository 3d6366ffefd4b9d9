import NIOCore
import NearbyCore
import NearbyWire

/// An ``HCITransport`` on a SwiftNIO channel: a TCP connection (``HCITransportSpec/tcp(host:port:)``), or the
/// descriptor of a UART or of the HCI user-channel socket adopted by `NIOPipeBootstrap`.
///
/// The pipeline is ``H4PacketDecoder`` then ``HCIInboundBridge``, which yields each complete packet (indicator
/// included) to ``inbound``. Writes are handed to the channel's event loop in call order; a write that fails later
/// closes the channel, which ends ``inbound`` with the error.
final class NIOHCITransport: HCITransport {
    let description: String
    let inbound: AsyncThrowingStream<[UInt8], any Error>
    private let channel: any Channel
    private let bridge: HCIInboundBridge

    init(channel: any Channel, bridge: HCIInboundBridge, inbound: AsyncThrowingStream<[UInt8], any Error>) {
        self.channel = channel
        self.bridge = bridge
        self.inbound = inbound
        self.description = bridge.description
    }

    func write(_ bytes: [UInt8]) throws {
        guard bridge.isOpen, channel.isActive else {
            throw NearbyError(.endpointIoError, "HCI transport \(description) is closed")
        }
        let promise = channel.eventLoop.makePromise(of: Void.self)
        promise.futureResult.whenFailure { [bridge, channel, description] error in
            bridge.end(with: NearbyError(.mediumUnavailable, "HCI transport \(description): write failed: \(error)"))
            channel.close(promise: nil)
        }
        channel.writeAndFlush(channel.allocator.buffer(bytes: bytes), promise: promise)
    }

    func close() {
        bridge.requestClose()
        channel.close(promise: nil)
    }

    /// Adds the H4 decoder and the bridge to a new channel's pipeline (on its event loop, before the first read).
    static func configure(
        _ channel: any Channel, bridge: HCIInboundBridge, onePacketPerWrite: Bool
    ) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            let operations = channel.pipeline.syncOperations
            if onePacketPerWrite { try operations.addHandler(OnePacketPerWriteHandler()) }
            try operations.addHandler(ByteToMessageHandler(H4PacketDecoder()))
            try operations.addHandler(bridge)
        }
    }
}

/// The last inbound handler of an HCI transport: yields each ``H4Packet`` to the transport's `inbound` stream
/// and ends the stream when the channel goes away: without an error after ``requestClose()``, with a
/// `.mediumUnavailable` error naming the cause otherwise.
final class HCIInboundBridge: ChannelInboundHandler, Sendable {
    typealias InboundIn = H4Packet

    private struct State {
        var closeRequested = false
        var ended = false
    }

    /// The transport's description, for errors.
    let description: String
    private let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    private let state = LockedValue(State())

    init(description: String, continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation) {
        self.description = description
        self.continuation = continuation
    }

    /// Neither closed by the host nor ended by the controller.
    var isOpen: Bool { state.withLock { !$0.closeRequested && !$0.ended } }

    /// The host is closing the transport: the stream ends without an error.
    func requestClose() {
        state.withLock { $0.closeRequested = true }
    }

    /// Ends the stream (once): with `error`, unless the host closed the transport.
    func end(with error: NearbyError) {
        let closedByHost: Bool? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            return state.closeRequested
        }
        guard let closedByHost else { return }
        if closedByHost { continuation.finish() } else { continuation.finish(throwing: error) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        continuation.yield(unwrapInboundIn(data).encoded)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let nearby: NearbyError
        if let error = error as? NearbyError {
            nearby = error.code == .malformedHCIPacket
                ? NearbyError(.mediumUnavailable, "the HCI stream is corrupt", cause: error) : error
        } else {
            nearby = NearbyError(.mediumUnavailable, "HCI transport \(description): read failed: \(error)")
        }
        end(with: nearby)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        end(with: NearbyError(.mediumUnavailable, "HCI transport \(description): the controller closed the connection"))
        context.fireChannelInactive()
    }
}
