import AsyncAlgorithms
import NearbySecurity
import NearbyWire

/// The one writer of an endpoint's channel: frames are encrypted (when encryption is on) and written strictly in
/// the order they were queued, so sequence numbers on the wire always count up by one.
///
/// ``enqueue(_:)`` suspends until the writer takes the frame, so a fast producer (a file sender) is held back by
/// the socket: no frame waits here besides the one being written. After a write error every later frame is
/// dropped; the reader side notices the broken channel and ends the session.
///
/// During a bandwidth upgrade the writer moves to the new channel: ``Item/holdAfter(_:)`` writes LAST_WRITE on the
/// old channel and holds every later frame (the session stops its payload senders meanwhile, so few are held),
/// ``Item/priority(_:)`` still reaches the old channel (SAFE_TO_CLOSE), and ``Item/switchChannel(_:)`` writes the
/// held frames on the new channel and carries on there. Frames are encrypted when written, so the sequence numbers
/// follow the order in which the peer reads them.
final class OutboundFrameWriter: Sendable {
    /// One frame to write.
    enum Item: Sendable {
        /// Bytes written as they are (handshake messages and frames before encryption).
        case plain([UInt8])
        /// A frame to encrypt with the channel's D2D context, then write.
        case sealed(ProtoOfflineFrame)
        /// The end: frames queued before it are written, frames after it (and held frames) are dropped.
        case end
        /// Write this frame (encrypted) on the current channel, then hold every later frame except
        /// ``priority(_:)`` ones.
        case holdAfter(ProtoOfflineFrame)
        /// Write this frame (encrypted) on the current channel, also while frames are held.
        case priority(ProtoOfflineFrame)
        /// Write on this channel from now on, starting with the held frames.
        case switchChannel(any EndpointChannel)
    }

    private let channelBox: LockedValue<any EndpointChannel>
    private let queue = AsyncChannel<Item>()
    private let secure: SecureContextBox
    private let lastWrite: LockedValue<ContinuousClock.Instant>
    /// Taken by the producer before it queues an item and by the writer after it receives one: ThreadSanitizer does
    /// not see the queue's continuation hand-off as ordering the producer's writes before the writer's reads, so
    /// without this it reports each frame as racing (docs/SANITIZERS.md). One short lock per frame. (A counter, not
    /// `Void`: TSan's exclusivity checks misreport a zero-sized value whose address is the lock's.)
    private let handOff = LockedValue(0)

    init(channel: any EndpointChannel, secure: SecureContextBox) {
        channelBox = LockedValue(channel)
        self.secure = secure
        lastWrite = LockedValue(.now)
    }

    /// When a frame was last written.
    var lastWriteInstant: ContinuousClock.Instant { lastWrite.withLock { $0 } }

    /// The channel frames are written to.
    var channel: any EndpointChannel { channelBox.withLock { $0 } }

    /// Runs until ``finishAfterQueued()``; returns the first write error, if any (later frames are then refused).
    func run() async -> (any Error)? {
        var failure: (any Error)?
        var ended = false
        var held: [Item]?
        for await item in queue {
            handOff.withLock { $0 &-= 1 }
            if case .end = item {
                ended = true
                queue.finish()
            }
            if failure != nil || ended {
                continue
            }
            do {
                switch item {
                case .end:
                    continue
                case .plain, .sealed:
                    if held != nil {
                        held!.append(item)
                    } else {
                        try await write(item)
                    }
                case .holdAfter(let frame):
                    try await write(.sealed(frame))
                    held = held ?? []
                case .priority(let frame):
                    try await write(.sealed(frame))
                case .switchChannel(let next):
                    channelBox.withLock { $0 = next }
                    let pending = held ?? []
                    held = nil
                    for frame in pending {
                        try await write(frame)
                    }
                }
            } catch {
                failure = error
            }
        }
        return failure
    }

    private func write(_ item: Item) async throws {
        let bytes: [UInt8]
        switch item {
        case .plain(let raw):
            bytes = raw
        case .sealed(let frame):
            let serialized = OfflineFrames.serialize(frame)
            bytes = try secure.context.withLock { channel throws(NearbyError) -> [UInt8] in
                guard channel != nil else { return serialized }
                return try channel!.encode(serialized)
            }
        default:
            return
        }
        try await channel.writeFrame(bytes)
        lastWrite.withLock { $0 = .now }
    }

    /// Queues a frame; returns once the writer has taken it (after the previous frame was written). Frames
    /// queued after ``finish()`` are dropped.
    func enqueue(_ item: Item) async {
        handOff.withLock { $0 &+= 1 }
        await queue.send(item)
    }

    /// Stops the writer after the frames already queued, also those whose ``enqueue(_:)`` is still waiting for
    /// the writer (a response being sent while the connection ends must still go out); later frames are dropped.
    /// Returns once the writer has taken the end marker.
    func finishAfterQueued() async {
        await queue.send(.end)
    }
}
