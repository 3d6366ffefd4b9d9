import Logging
import NIOCore
import NearbyCore
import NearbyWire

/// An `EndpointChannel` over one TCP connection, framed with the 4-byte big-endian length prefix of
/// `LengthPrefixFraming`.
///
/// The connection is a SwiftNIO channel whose pipeline decodes inbound bytes into frame bodies
/// (`LengthPrefixedFrameReader`) and prefixes outbound bodies without copying them (`LengthPrefixedFrameWriter`);
/// it is driven from Swift concurrency through an `NIOAsyncChannel`. `TCP_NODELAY` is set, so small frames leave at
/// once.
///
/// Concurrency: one task may read while other tasks write. Reads must not overlap each other (a second concurrent
/// ``readFrame()`` throws `.outOfOrderApiCall`); concurrent writes are allowed and each frame goes out whole.
/// ``close()`` may be called at any time from any task, also while a read or a write is pending.
///
/// Instances are made by ``TCPListener`` (accepted connections) and ``TCPConnector`` (outgoing connections).
package final class TCPEndpointChannel: EndpointChannel {
    /// How long ``close()`` lets frames that are still queued drain to a peer that is slow to read before the
    /// connection is cut.
    package static let closeFlushTimeout: Duration = .seconds(2)

    /// How much a read takes from the socket: adaptive, from 2 KiB up to 1 MiB.
    static let receiveAllocator = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 1 << 20)

    /// How many bytes of sent frames NIO may hold before ``writeFrame(_:)`` waits: up to 512 KiB queued, writing
    /// resumes below 128 KiB.
    ///
    /// NIO's default (64 KiB high, 32 KiB low) is less than one 64 KiB chunk frame with its headers, so every chunk
    /// of a file made the channel unwritable, suspended the writer and woke it after the flush. With room for a few
    /// chunks the writer keeps going while the socket drains (session 19, alternating 1 GiB runs: files about 10 %
    /// faster, the sender's CPU per GiB about 5 % lower; Benchmarks/README.md). A peer that does not read holds at
    /// most this much of our frames in NIO, beside what its socket buffers take.
    static let writeBufferWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 128 << 10, high: 512 << 10)

    /// The medium this connection belongs to.
    package let medium: MediumKind
    /// The peer's address and port, e.g. `10.0.0.2:40123` or `[fe80::1%eth0]:40123`.
    package let peerDescription: String

    private let channel: any Channel
    private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    private let outputDone: EventLoopFuture<Void>
    private let inbound: TCPInboundFrames
    private let state = LockedValue(TCPChannelState())
    private let logger: Logger

    /// Sets up the framing pipeline on a freshly created NIO channel and wraps it.
    ///
    /// Must run on `channel`'s event loop, before the channel has read anything (in a channel initializer, or in the
    /// callback of the connect future), so that no inbound byte can slip past the framing handlers.
    static func wrapSynchronously(
        _ channel: any Channel, medium: MediumKind, logger: Logger
    ) throws -> TCPEndpointChannel {
        channel.eventLoop.preconditionInEventLoop()
        let observer = TCPOutputShutdownObserver(eventLoop: channel.eventLoop)
        let asyncChannel: NIOAsyncChannel<[UInt8], ByteBuffer>
        do {
            // Reads grow up to 1 MiB while the peer keeps the socket full (NIO's default stops at 64 KiB, less than
            // one 64 KiB chunk frame with its headers, so every chunk took two reads and a merge of the two
            // buffers); an idle connection's reads shrink back.
            try channel.syncOptions?.setOption(.recvAllocator, value: Self.receiveAllocator)
            try channel.syncOptions?.setOption(.writeBufferWaterMark, value: Self.writeBufferWaterMark)
            let operations = channel.pipeline.syncOperations
            try operations.addHandler(LengthPrefixedFrameReader())
            try operations.addHandler(LengthPrefixedFrameWriter())
            try operations.addHandler(observer)
            asyncChannel = try NIOAsyncChannel<[UInt8], ByteBuffer>(
                wrappingChannelSynchronously: channel,
                configuration: .init(isOutboundHalfClosureEnabled: true)
            )
        } catch {
            // A peer that accepted and closed at once leaves a closed channel here: the handlers cannot be added,
            // and the observer's promise must not be left pending (a leaked promise traps in debug builds, and
            // whoever waited for it would wait forever).
            observer.abandon()
            throw error
        }
        let halves = TCPAsyncChannelHalves(asyncChannel)
        return TCPEndpointChannel(
            channel: channel,
            inbound: halves.inbound,
            outbound: halves.outbound,
            outputDone: observer.outputDone,
            medium: medium,
            peerDescription: describe(channel.remoteAddress),
            logger: logger
        )
    }

    private init(
        channel: any Channel,
        inbound: NIOAsyncChannelInboundStream<[UInt8]>,
        outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
        outputDone: EventLoopFuture<Void>,
        medium: MediumKind,
        peerDescription: String,
        logger: Logger
    ) {
        self.channel = channel
        self.outbound = outbound
        self.outputDone = outputDone
        self.medium = medium
        self.peerDescription = peerDescription
        self.inbound = TCPInboundFrames(inbound.makeAsyncIterator())
        var logger = logger
        logger[metadataKey: "medium"] = "\(medium)"
        logger[metadataKey: "peer"] = "\(peerDescription)"
        self.logger = logger
    }

    deinit {
        // An NIOAsyncChannel's writer must be finished before it goes away, or NIO traps; closing also releases
        // the socket of a channel its owner dropped without calling close().
        outbound.finish()
        channel.close(promise: nil)
    }

    /// Whether a ``readFrame()`` is under way (tests wait on it instead of sleeping before they act on a pending read).
    var isReadPending: Bool { state.withLock { $0.isReading } }

    /// Reads the next frame body.
    ///
    /// - Returns: The body without its length prefix, or `nil` when the peer closed the connection between two
    ///   frames, or after ``close()`` (also when ``close()`` interrupts this read).
    /// - Throws: `NearbyError` with code `.invalidFraming` when the peer announced a negative length
    ///   or one above 1 MiB, or closed the connection inside a frame; `.endpointIoError` when the connection failed
    ///   (reset, for example); `.outOfOrderApiCall` when another read is still pending; `CancellationError` when
    ///   the calling task was cancelled (the channel is then closed, since its inbound stream cannot be resumed).
    ///   After an error the channel is closed.
    package func readFrame() async throws -> [UInt8]? {
        let mayRead = try state.withLock { state -> Bool in
            guard !state.isReading else {
                throw NearbyError(.outOfOrderApiCall, "readFrame() called on \(peerDescription) while another read is pending")
            }
            guard !state.isClosed, !state.isInboundFinished else { return false }
            state.isReading = true
            return true
        }
        guard mayRead else { return nil }

        let result: Result<[UInt8]?, any Error>
        do {
            result = .success(try await inbound.next())
        } catch {
            result = .failure(error)
        }
        let closedLocally = state.withLock { state -> Bool in
            state.isReading = false
            if case .success(.some) = result {} else { state.isInboundFinished = true }
            return state.isClosed
        }

        switch result {
        case .success(.some(let body)):
            return body
        case .success(.none):
            if Task.isCancelled && !closedLocally {
                logger.debug("read cancelled; closing the channel")
                await close()
                throw CancellationError()
            }
            logger.debug("peer closed the connection")
            return nil
        case .failure(let error):
            if closedLocally {
                return nil
            }
            if error is CancellationError {
                await close()
                throw error
            }
            let nearbyError = Self.readError(error, peer: peerDescription)
            logger.debug("read failed; closing the channel", metadata: ["error": "\(nearbyError)"])
            await close()
            throw nearbyError
        }
    }

    /// Writes one frame body, prefixed with its length, and flushes it.
    ///
    /// Suspends while the connection's send buffer is full (the peer reads slowly), so a fast writer cannot queue
    /// unbounded memory.
    ///
    /// - Throws: `NearbyError` with code `.invalidFraming` when `body` is longer than 1 MiB (nothing is
    ///   sent, the channel stays usable); `.endpointIoError` when the channel is closed or the connection failed;
    ///   `CancellationError` when the calling task was cancelled while waiting to write (the frame was not sent).
    package func writeFrame(_ body: [UInt8]) async throws {
        guard body.count <= LengthPrefixFraming.maxFrameLength else {
            throw NearbyError(
                .invalidFraming,
                "frame body of \(body.count) bytes exceeds the maximum of \(LengthPrefixFraming.maxFrameLength) bytes"
            )
        }
        guard !state.withLock({ $0.isClosed }) else {
            throw NearbyError(.endpointIoError, "cannot write to \(peerDescription): the channel is closed")
        }
        do {
            try await outbound.write(ByteBuffer(bytes: body))
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw NearbyError(.endpointIoError, "writing to \(peerDescription) failed: the connection is closed", cause: error)
        }
    }

    /// Closes the connection. Idempotent; safe to call while a read or write is pending in another task.
    ///
    /// Frames already accepted by ``writeFrame(_:)`` are sent first (for at most ``closeFlushTimeout`` if the peer
    /// does not read), then the connection is closed. A pending read returns `nil`; later reads return `nil` and
    /// later writes throw `.endpointIoError`. Returns once the socket is closed.
    package func close() async {
        let isFirstClose = state.withLock { state -> Bool in
            defer { state.isClosed = true }
            return !state.isClosed
        }
        let channel = self.channel
        if isFirstClose {
            logger.debug("closing")
            // Finishing the writer makes NIO flush what is queued and then shut the output down (FIN); close
            // completely once that happened, or after the flush timeout when the peer does not read.
            outbound.finish()
            let nanoseconds = Self.closeFlushTimeout.components.seconds * 1_000_000_000
                + Self.closeFlushTimeout.components.attoseconds / 1_000_000_000
            let forcedClose = channel.eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) {
                channel.close(promise: nil)
            }
            outputDone.whenComplete { _ in
                forcedClose.cancel()
                channel.close(promise: nil)
            }
        }
        try? await channel.closeFuture.get()
    }

    /// Maps an error from the inbound stream to the error ``readFrame()`` reports.
    static func readError(_ error: any Error, peer: String) -> NearbyError {
        if let error = error as? NearbyError {
            return NearbyError(error.code, "reading from \(peer) failed: \(error.message)", cause: error)
        }
        return NearbyError(.endpointIoError, "reading from \(peer) failed: \(error)", cause: error)
    }

    /// `host:port`, with brackets around an IPv6 host.
    static func describe(_ address: SocketAddress?) -> String {
        guard let address, let host = address.ipAddress, let port = address.port else {
            return address.map { "\($0)" } ?? "unknown peer"
        }
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// The mutable state of a ``TCPEndpointChannel``.
struct TCPChannelState: Sendable {
    /// ``TCPEndpointChannel/close()`` was called.
    var isClosed = false
    /// A read is pending.
    var isReading = false
    /// The inbound stream ended (end of stream or error); later reads return `nil`.
    var isInboundFinished = false
}

/// Holds the one iterator of a channel's inbound stream.
///
/// The iterator is not `Sendable`; ``TCPEndpointChannel/readFrame()`` guarantees that at most one task uses it at a
/// time (its `isReading` flag), which is what makes sharing this box sound.
final class TCPInboundFrames: @unchecked Sendable {
    private var iterator: NIOAsyncChannelInboundStream<[UInt8]>.AsyncIterator

    init(_ iterator: NIOAsyncChannelInboundStream<[UInt8]>.AsyncIterator) {
        self.iterator = iterator
    }

    /// The next frame body, `nil` at the end of the stream. Only one caller at a time.
    func next() async throws -> [UInt8]? {
        try await iterator.next()
    }
}

/// The inbound stream and outbound writer of an `NIOAsyncChannel`, taken out of it for good.
///
/// NIO deprecates `NIOAsyncChannel.inbound` and `.outbound` in favour of the scoped `executeThenClose`, which
/// finishes the writer and closes the channel when its closure returns. A ``TCPEndpointChannel`` is owned by an
/// object, not by a lexical scope, so it takes the two halves once, here, through ``TCPAsyncChannelParts`` (which
/// reaches the same properties without repeating the deprecation warning at every use), and upholds the scope's
/// contract itself: the writer is finished and the channel closed by ``TCPEndpointChannel/close()``, after a read
/// error, and in `deinit`.
struct TCPAsyncChannelHalves {
    let inbound: NIOAsyncChannelInboundStream<[UInt8]>
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    init(_ asyncChannel: some TCPAsyncChannelParts) {
        inbound = asyncChannel.inbound
        outbound = asyncChannel.outbound
    }
}

/// The unscoped accessors of a framed `NIOAsyncChannel`; see ``TCPAsyncChannelHalves``.
protocol TCPAsyncChannelParts {
    /// The stream of inbound frame bodies; only one iterator may be made.
    var inbound: NIOAsyncChannelInboundStream<[UInt8]> { get }
    /// The writer of outbound frame bodies; it must be finished before it is released.
    var outbound: NIOAsyncChannelOutboundWriter<ByteBuffer> { get }
}

extension NIOAsyncChannel: TCPAsyncChannelParts where Inbound == [UInt8], Outbound == ByteBuffer {}
