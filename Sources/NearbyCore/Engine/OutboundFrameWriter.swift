import NearbySecurity
import NearbyWire

/// The one writer of an endpoint's channel: frames are encrypted (when encryption is on) and written strictly in
/// the order they were queued, so sequence numbers on the wire always count up by one.
///
/// Three ways to queue, all into one FIFO:
/// - ``enqueue(_:)`` suspends until the writer takes the frame, so a fast producer (a payload sender) is held back
///   by the socket: no data frame waits here besides those being sealed or written (at most the sealing width).
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
/// held frames on the new channel and carries on there. Frames are encrypted when taken to be written, so the
/// sequence numbers follow the order in which the peer reads them.
///
/// Sealing in parallel: the writer takes each frame in order and reserves its D2D sequence number; large frames
/// (chunks) are then sealed by child tasks of ``run()``, up to ``sealingWidth`` at once, while the writer writes the
/// earlier ones; ``SealedFrameOrder`` hands them back in the order they were taken, so each is sealed with its own
/// number and written in that order.
///
/// Auto-reconnect: ``revive(on:context:)`` queues a marker; frames taken before it are written to the broken
/// channel (or dropped), then the writer carries on on the new channel with the new context.
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
        /// The writer, waiting for an entry to be queued (or a seal to finish).
        var writer: CheckedContinuation<Void, Never>?
        /// A frame sealed on another task may be ready to write.
        var sealFinished = false
        /// Set once the writer took the end marker: later frames are dropped.
        var finished = false
        /// Callers of ``waitForRoom()``, resumed once fewer than ``maxBacklog`` entries wait.
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// How many frames may wait before ``waitForRoom()`` waits.
    static let maxBacklog = 64
    /// How many frames may be held during a bandwidth upgrade before the connection is given up.
    static let maxHeld = 4096

    /// Why the writer woke up.
    private enum Wake {
        case item(Item)
        case sealFinished
        case finished
    }

    private let channelBox: LockedValue<any EndpointChannel>
    private let queue: LockedValue<Queue>
    /// Frames taken and not yet written, in order.
    private let order: SealedFrameOrder
    /// How many frames may be taken and not yet written; large ones are sealed on that many tasks at once.
    let sealingWidth: Int
    private let secure: SecureContextBox
    private let clock: NearbyClock
    private let lastWrite: LockedValue<Duration>
    private let writeStarted = LockedValue<Duration?>(nil)
    private let firstFailure = LockedValue<NearbyError?>(nil)
    private let failureHandler = LockedValue<(@Sendable (NearbyError) -> Void)?>(nil)
    /// How many frames are held during a bandwidth upgrade (they count as waiting).
    private let heldCount = LockedValue(0)

    /// - Parameters:
    ///   - clock: The clock write times are read from.
    ///   - sealingWidth: How many frames may be sealed at once (``SealingWidth``; 1 seals each frame on the
    ///     writer's own task before writing it).
    package init(
        channel: any EndpointChannel, secure: SecureContextBox, clock: NearbyClock = .continuous,
        sealingWidth: Int = SealingWidth.default
    ) {
        channelBox = LockedValue(channel)
        let queue = LockedValue(Queue())
        self.queue = queue
        order = SealedFrameOrder(onReady: { Self.sealFinished(queue) })
        self.sealingWidth = max(1, sealingWidth)
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

    /// Frames queued, held or being sealed, not yet written.
    private var backlog: Int { queue.withLock { $0.entries.count } + heldCount.withLock { $0 } + order.count }

    /// The channel frames are written to.
    var channel: any EndpointChannel { channelBox.withLock { $0 } }

    /// Runs until ``finishAfterQueued()``; returns the first write error, if any (later frames are then refused).
    /// Its child tasks (frames being sealed) end before it returns.
    package func run() async -> (any Error)? {
        await withDiscardingTaskGroup { group in
            await runLoop(sealingOn: &group)
        }
    }

    private func runLoop(sealingOn group: inout DiscardingTaskGroup) async -> (any Error)? {
        var failure: (any Error)?
        var ended = false
        var held: [Item]?
        while true {
            // Frames whose seal finished go out first, in the order they were taken.
            failure = await writeReady(failure: failure)
            let item: Item
            switch await next(takingItems: order.count < sealingWidth, inFlight: order.count > 0) {
            case .finished: return failure
            case .sealFinished: continue
            case .item(let taken): item = taken
            }
            if case .end = item {
                ended = true
                finish()
            }
            if case .revive(let nextChannel, let context, let done) = item {
                // Everything taken so far belongs on the broken channel (or is dropped with its failure).
                failure = await writeTaken(failure: failure)
                if !ended { revive(on: nextChannel, context: context, failure: &failure, held: &held) }
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
                        try take(item, sealingOn: &group)
                    }
                case .holdAfter(let frame):
                    try take(.sealed(frame), sealingOn: &group)
                    held = held ?? []
                case .priority(let frame):
                    try take(.sealed(frame), sealingOn: &group)
                case .switchChannel(let nextChannel):
                    // Everything taken so far belongs on the current channel.
                    failure = await writeTaken(failure: failure)
                    if failure != nil { continue }
                    channelBox.withLock { $0 = nextChannel }
                    let pending = held ?? []
                    held = nil
                    heldCount.withLock { $0 = 0 }
                    for frame in pending {
                        try take(frame, sealingOn: &group)
                    }
                }
            } catch {
                failure = error
                report(error)
            }
        }
    }

    /// Writes (or, after a failure, drops) every frame taken so far, waiting for those still being sealed.
    private func writeTaken(failure: (any Error)?) async -> (any Error)? {
        var failure = failure
        while order.count > 0 {
            failure = await writeReady(failure: failure)
            if order.count > 0 { _ = await next(takingItems: false, inFlight: true) }
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

    /// Reserves the frame's place (and sequence number) in the order of writing; seals it here, or on a child
    /// task when it is large and the writer seals in parallel.
    private func take(_ item: Item, sealingOn group: inout DiscardingTaskGroup) throws(NearbyError) {
        guard case .sealed(let frame) = item else {
            if case .plain(let raw) = item { order.append(.success(raw)) }
            return
        }
        let reserved = try secure.context.withLock { channel throws(NearbyError) -> (sequence: Int32, sealer: D2DSealer)? in
            guard channel != nil else { return nil }
            return (try channel!.reserveSequenceNumber(), channel!.sealer)
        }
        guard let (sequence, sealer) = reserved else {
            order.append(.success(OfflineFrames.serialize(frame)))
            return
        }
        if sealingWidth > 1, frame.v1.payloadTransfer.payloadChunk.body.count >= SealingWidth.parallelThreshold {
            let ticket = order.reserve()
            let order = self.order
            group.addTask {
                order.complete(ticket, with: Result { () throws(NearbyError) in
                    try sealer.seal(OfflineFrames.serialize(frame), sequence: sequence)
                })
            }
        } else {
            order.append(Result { () throws(NearbyError) in
                try sealer.seal(OfflineFrames.serialize(frame), sequence: sequence)
            })
        }
    }

    /// Writes every frame that is ready, in order; returns the first error (after which frames are dropped).
    private func writeReady(failure: (any Error)?) async -> (any Error)? {
        var failure = failure
        while let ready = order.takeReadyHead() {
            guard failure == nil else { continue }
            do {
                let bytes = try ready.get()
                writeStarted.withLock { $0 = clock.now }
                defer { writeStarted.withLock { $0 = nil } }
                try await channel.writeFrame(bytes)
                lastWrite.withLock { $0 = clock.now }
            } catch {
                failure = error
                report(error)
            }
        }
        return failure
    }

    /// Records the first failure and tells the session.
    private func report(_ error: any Error) {
        let reported = (error as? NearbyError) ?? NearbyError(.endpointIoError, "writing to the peer failed", cause: error)
        firstFailure.withLock { $0 = reported }
        failureHandler.withLock { $0 }?(reported)
    }

    /// Queues a frame; returns once the writer has taken it (when fewer than ``sealingWidth`` earlier frames are
    /// still being sealed or written). Frames queued after the writer finished are dropped.
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

    /// The next item for the writer when `takingItems`; `.sealFinished` when a frame sealed on another task may be
    /// ready; `.finished` once finished, empty and nothing is `inFlight`.
    ///
    /// Entries are only ever taken out of the queue under its lock, never handed over through the continuation:
    /// the lock is what orders the producer's construction of a frame before the writer's use of it, also for
    /// ThreadSanitizer, which does not see a continuation's resume as ordering (docs/SANITIZERS.md).
    private func next(takingItems: Bool, inFlight: Bool) async -> Wake {
        func take(_ state: inout Queue) -> (wake: Wake, entry: Entry?, roomy: [CheckedContinuation<Void, Never>])? {
            if state.sealFinished {
                state.sealFinished = false
                return (.sealFinished, nil, [])
            }
            if takingItems, !state.entries.isEmpty {
                let entry = state.entries.removeFirst()
                guard state.entries.count < Self.maxBacklog, !state.roomWaiters.isEmpty else {
                    return (.item(entry.item), entry, [])
                }
                defer { state.roomWaiters = [] }
                return (.item(entry.item), entry, state.roomWaiters)
            }
            if state.finished, state.entries.isEmpty, !inFlight { return (.finished, nil, []) }
            return nil
        }
        while true {
            if let taken = queue.withLock({ take(&$0) }) {
                for waiter in taken.roomy { waiter.resume() }
                taken.entry?.taken?.resume()
                return taken.wake
            }
            await withCheckedContinuation { (writer: CheckedContinuation<Void, Never>) in
                let isReady = queue.withLock { state -> Bool in
                    if state.sealFinished || (takingItems && !state.entries.isEmpty)
                        || (state.finished && state.entries.isEmpty && !inFlight)
                    {
                        return true
                    }
                    state.writer = writer
                    return false
                }
                if isReady { writer.resume() }
            }
        }
    }

    /// Wakes the writer for a frame a child task finished sealing.
    private static func sealFinished(_ queue: LockedValue<Queue>) {
        let writer = queue.withLock { state -> CheckedContinuation<Void, Never>? in
            state.sealFinished = true
            defer { state.writer = nil }
            return state.writer
        }
        writer?.resume()
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
