import AsyncAlgorithms
import NearbySecurity
import NearbyWire
import Synchronization

/// The one writer of an endpoint's channel: frames are encrypted (when encryption is on) and written strictly in
/// the order they were queued, so sequence numbers on the wire always count up by one.
///
/// ``enqueue(_:)`` suspends until the writer takes the frame, so a fast producer (a file sender) is held back by
/// the socket: no frame waits here besides the one being written. After a write error every later frame is
/// dropped; the reader side notices the broken channel and ends the session.
final class OutboundFrameWriter: Sendable {
    /// One frame to write.
    enum Item: Sendable {
        /// Bytes written as they are (handshake messages and frames before encryption).
        case plain([UInt8])
        /// A frame to encrypt with the channel's D2D context, then write.
        case sealed(ProtoOfflineFrame)
        /// The end: frames queued before it are written, frames after it are dropped.
        case end
    }

    private let channel: any EndpointChannel
    private let queue = AsyncChannel<Item>()
    private let secure: SecureContextBox
    private let lastWrite: Mutex<ContinuousClock.Instant>

    init(channel: any EndpointChannel, secure: SecureContextBox) {
        self.channel = channel
        self.secure = secure
        lastWrite = Mutex(.now)
    }

    /// When a frame was last written.
    var lastWriteInstant: ContinuousClock.Instant { lastWrite.withLock { $0 } }

    /// Runs until ``finish()``; returns the first write error, if any (later frames are then refused).
    func run() async -> (any Error)? {
        var failure: (any Error)?
        var ended = false
        for await item in queue {
            if case .end = item {
                ended = true
                queue.finish()
            }
            if failure != nil || ended {
                continue
            }
            do {
                let bytes: [UInt8]
                switch item {
                case .end:
                    continue
                case .plain(let raw):
                    bytes = raw
                case .sealed(let frame):
                    let serialized = OfflineFrames.serialize(frame)
                    bytes = try secure.context.withLock { channel throws(NearbyError) -> [UInt8] in
                        guard channel != nil else { return serialized }
                        return try channel!.encode(serialized)
                    }
                }
                try await channel.writeFrame(bytes)
                lastWrite.withLock { $0 = .now }
            } catch {
                failure = error
            }
        }
        return failure
    }

    /// Queues a frame; returns once the writer has taken it (after the previous frame was written). Frames
    /// queued after ``finish()`` are dropped.
    func enqueue(_ item: Item) async {
        await queue.send(item)
    }

    /// Stops the writer after the frames already queued, also those whose ``enqueue(_:)`` is still waiting for
    /// the writer (a response being sent while the connection ends must still go out); later frames are dropped.
    /// Returns once the writer has taken the end marker.
    func finishAfterQueued() async {
        await queue.send(.end)
    }
}
