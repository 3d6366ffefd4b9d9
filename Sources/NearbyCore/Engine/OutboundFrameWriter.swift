import NearbySecurity
import NearbyWire

/// The one writer of an endpoint's channel: frames are encrypted (when encryption is on) and written strictly in
/// the order they were queued, so sequence numbers on the wire always count up by one.
///
/// Three ways to queue, all into one FIFO:
/// - ``enqueue(_:)`` suspends until the writer takes the frame, so a fast producer (a payload sender) is held back
///   by the socket: no data frame waits here besides the one being written.
/// - ``post(_:)`` never waits: for control frames our app or timers send (DISCONNECTION, a CONNECTION_RESPONSE,
///   our KEEP_ALIVE), so `disconnect`, `accept`/`reject` and `shutdown` never block behind a write to a peer that
///   stopped reading.
/// - frames a peer provokes (acks, responses) are posted too, and the session then awaits ``waitForRoom()`` once
///   per frame read, so a peer that floods us and never reads cannot grow this queue without bound.
///
/// The writer does not time out on its own: it reports when the current write started
/// (``writeInProgressSince``) and the session drops the endpoint when a write outlives its deadline (closing the
/// channel fails the stuck write). After a write error every later frame is dropped and ``onFailure(_:)`` tells
/// the session, which ends.
///
/// During a bandwidth upgrade the writer moves to the new channel: ``Item/holdAfter(_:)`` writes LAST_WRITE on the
/// old channel and holds every later frame (the session stops its payload senders meanwhile, so few are held),
/// ``Item/priority(_:)`` still reaches the old channel (SAFE_TO_CLOSE), and ``Item/switchChannel(_:)`` writes the
/// held frames on the new channel and carries on there. Frames are encrypted when written, so the sequence numbers
/// follow the order in which the peer reads them.
package final class OutboundFrameWriter: Sendable {
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
        /// Auto-reconnect: everything before this was written to the broken channel or dropped; from now on write
        /// on this channel, sealed with this context (after the reconnect handshake). `done` is resumed once the
        /// writer switched.
        case revive(any EndpointChannel, D2DSecureChannel?, done: CheckedContinuation<Void, Never>)
    }

    /// A queued frame and, for ``enqueue(_:)``, the producer waiting for the writer to take it.
    private struct Entry {
        var item: Item
        var taken: CheckedContinuation<Void, Never>?
    }

    private struct Queue {
        var entries: [Entry] = []
        /// The writer, waiting for an entry to be queued.
        var writer: CheckedContinuation<Void, Never>?
        /// Set once the writer took the end marker: later frames are dropped.
        var finished = false
        /// Callers of ``waitForRoom()``, resumed once fewer than ``maxBacklog`` entries wait.
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// How many frames may wait before ``waitForRoom()`` waits.
    static let maxBacklog = 64
    /// How many frames may be held during a bandwidth upgrade before the connection is given up.
    static let maxHeld = 4096

    private let channelBox: LockedValue<any EndpointChannel>
    private let queue = LockedValue(Queue())
    private let secure: SecureContextBox
    private let clock: NearbyClock
    private let lastWrite: LockedValue<Duration>
    private let writeStarted = LockedValue<Duration?>(nil)
    private let firstFailure = LockedValue<NearbyError?>(nil)
    private let failureHandler = LockedValue<(@Sendable (NearbyError) -> Void)?>(nil)
    /// How many frames are held during a bandwidth upgrade (they count as waiting).
    private let heldCount = LockedValue(0)

    /// - Parameter clock: The clock write times are read from.
    package init(channel: any EndpointChannel, secure: SecureContextBox, clock: NearbyClock = .continuous) {
        channelBox = LockedValue(channel)
        self.secure = secure
        self.clock = clock
        lastWrite = LockedValue(clock.now)
    }

    /// When a frame was last written (on the writer's clock).
    var lastWriteInstant: Duration { lastWrite.withLock { $0 } }

    /// When the write under way started (on the writer's clock); `nil` while the writer is not writing.
    var writeInProgressSince: Duration? { writeStarted.withLock { $0 } }

    /// Calls `handler` once, with the first write error (a failed write drops every later frame, so the session
    /// is over even if its read loop does not notice).
    func onFailure(_ handler: @escaping @Sendable (NearbyError) -> Void) {
        failureHandler.withLock { $0 = handler }
    }

    /// `frame` as the item to queue: sealed once encryption is on, plain before.
    func item(_ frame: ProtoOfflineFrame) -> Item {
        secure.isEnabled ? .sealed(frame) : .plain(OfflineFrames.serialize(frame))
    }

    /// The first write error, once a write failed (every later frame is then dropped).
    var failure: NearbyError? { firstFailure.withLock { $0 } }

    /// Whether nothing is being written or waiting to be.
    var isIdle: Bool { writeInProgressSince == nil && backlog == 0 }

    /// Frames queued or held, not yet written.
    private var backlog: Int { queue.withLock { $0.entries.count } + heldCount.withLock { $0 } }

    /// The channel frames are written to.
    var channel: any EndpointChannel { channelBox.withLock { $0 } }

    /// Runs until ``finishAfterQueued()``; returns the first write error, if any (later frames are then refused).
    package func run() async -> (any Error)? {
        var failure: (any Error)?
        var ended = false
        var held: [Item]?
        while let item = await next() {
            if case .end = item {
                ended = true
                finish()
            }
            if case .revive(let next, let context, let done) = item {
                if !ended { revive(on: next, context: context, failure: &failure, held: &held) }
                done.resume()
                continue
            }
            if failure != nil || ended {
                continue
            }
            do {
                switch item {
                case .end, .revive:
                    continue
                case .plain, .sealed:
                    if held != nil {
                        // Payload senders are stopped while frames are held, so only a peer provoking replies
                        // during the drain can get here often.
                        guard held!.count < Self.maxHeld else {
                            throw NearbyError(
                                .invalidFrame, "the peer provoked more than \(Self.maxHeld) frames during a bandwidth upgrade")
                        }
                        held!.append(item)
                        heldCount.withLock { $0 += 1 }
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
                    heldCount.withLock { $0 = 0 }
                    for frame in pending {
                        try await write(frame)
                    }
                }
            } catch {
                failure = error
                let reported = (error as? NearbyError) ?? NearbyError(.endpointIoError, "writing to the peer failed", cause: error)
                firstFailure.withLock { $0 = reported }
                failureHandler.withLock { $0 }?(reported)
            }
        }
        return failure
    }

    /// Auto-reconnect: the frames before the marker went to the broken channel (or were dropped); the writer
    /// carries on on `next`, sealing with `context` from now on.
    private func revive(
        on next: any EndpointChannel, context: D2DSecureChannel?, failure: inout (any Error)?, held: inout [Item]?
    ) {
        failure = nil
        held = nil
        firstFailure.withLock { $0 = nil }
        heldCount.withLock { $0 = 0 }
        channelBox.withLock { $0 = next }
        secure.context.withLock { $0 = context }
        lastWrite.withLock { $0 = clock.now }
    }

    /// Auto-reconnect: returns once every frame queued before was written to the broken channel or dropped and the
    /// writer writes on `channel`, sealed with `context` (which also becomes the session's context for reading;
    /// `nil`: plaintext, for a new connection's handshake).
    func revive(on channel: any EndpointChannel, context: D2DSecureChannel?) async {
        await withCheckedContinuation { done in
            add(Entry(item: .revive(channel, context, done: done), taken: nil))
        }
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
        writeStarted.withLock { $0 = clock.now }
        defer { writeStarted.withLock { $0 = nil } }
        try await channel.writeFrame(bytes)
        lastWrite.withLock { $0 = clock.now }
    }

    /// Queues a frame; returns once the writer has taken it (after the previous frame was written). Frames
    /// queued after the writer finished are dropped.
    func enqueue(_ item: Item) async {
        await withCheckedContinuation { taken in
            add(Entry(item: item, taken: taken))
        }
    }

    /// Queues a frame and returns at once. Frames queued after the writer finished are dropped.
    func post(_ item: Item) {
        add(Entry(item: item, taken: nil))
    }

    /// Returns once fewer than ``maxBacklog`` frames wait in the queue (at once if they do), or the writer
    /// finished. A session posts the frames a peer provoked with ``post(_:)`` while it acts on a decision and
    /// awaits this once afterwards, so a flooding peer that never reads is held back without a suspension between
    /// the actions of one decision.
    func waitForRoom() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let roomy = queue.withLock { state -> Bool in
                if state.finished || state.entries.count < Self.maxBacklog { return true }
                state.roomWaiters.append(waiter)
                return false
            }
            if roomy { waiter.resume() }
        }
    }

    /// Stops the writer after the frames already queued, also those whose ``enqueue(_:)`` is still waiting for
    /// the writer (a response being sent while the connection ends must still go out); later frames are dropped.
    /// Returns at once; the writer's ``run()`` returns once it wrote (or dropped) what came before.
    package func finishAfterQueued() {
        post(.end)
    }

    private func add(_ entry: Entry) {
        enum Outcome { case dropped, woke(CheckedContinuation<Void, Never>), queued }
        let outcome = queue.withLock { state -> Outcome in
            if state.finished { return .dropped }
            state.entries.append(entry)
            guard let writer = state.writer else { return .queued }
            state.writer = nil
            return .woke(writer)
        }
        switch outcome {
        case .dropped: Self.release(entry)
        case .woke(let writer): writer.resume()
        case .queued: break
        }
    }

    /// The next item for the writer; `nil` once finished and empty.
    ///
    /// Entries are only ever taken out of the queue under its lock, never handed over through the continuation:
    /// the lock is what orders the producer's construction of a frame before the writer's use of it, also for
    /// ThreadSanitizer, which does not see a continuation's resume as ordering (docs/SANITIZERS.md).
    private func next() async -> Item? {
        while true {
            let (taken, roomy): (Entry??, [CheckedContinuation<Void, Never>]) = queue.withLock { state in
                if !state.entries.isEmpty {
                    let entry = state.entries.removeFirst()
                    guard state.entries.count < Self.maxBacklog, !state.roomWaiters.isEmpty else { return (.some(entry), []) }
                    defer { state.roomWaiters = [] }
                    return (.some(entry), state.roomWaiters)
                }
                return (state.finished ? .some(nil) : nil, [])
            }
            for waiter in roomy { waiter.resume() }
            if let entry = taken {
                entry?.taken?.resume()
                return entry?.item
            }
            await withCheckedContinuation { (writer: CheckedContinuation<Void, Never>) in
                let ready = queue.withLock { state -> Bool in
                    if !state.entries.isEmpty || state.finished { return true }
                    state.writer = writer
                    return false
                }
                if ready { writer.resume() }
            }
        }
    }

    /// Releases whoever waits for a dropped entry.
    private static func release(_ entry: Entry) {
        entry.taken?.resume()
        if case .revive(_, _, let done) = entry.item { done.resume() }
    }

    /// Drops every queued frame (releasing their producers) and refuses later ones.
    private func finish() {
        let (dropped, waiters) = queue.withLock { state -> ([Entry], [CheckedContinuation<Void, Never>]) in
            state.finished = true
            defer {
                state.entries = []
                state.roomWaiters = []
            }
            return (state.entries, state.roomWaiters)
        }
        for entry in dropped { Self.release(entry) }
        for waiter in waiters { waiter.resume() }
    }
}
