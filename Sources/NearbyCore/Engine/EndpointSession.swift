import Foundation
import Logging
import NearbySecurity
import NearbyWire

/// Holds an endpoint's D2D context where both the reader and the writer can reach it.
package final class SecureContextBox: Sendable {
    /// Makes a box without a context (plaintext).
    package init() {}

    let context = LockedValue<D2DSecureChannel?>(nil)
    var isEnabled: Bool { context.withLock { $0 != nil } }
}

/// Drives one connection over one channel: reads frames and performs its `ConnectionStateMachine`'s actions,
/// and wires the parts that do the rest: the outgoing payload sender, the incoming payload sink, the bandwidth
/// upgrade coordinator and the connection's deadlines (armed on the session's clock). It reports
/// ``EndpointEvent``s.
public actor EndpointSession {
    /// How the session decides whether an incoming request may proceed (strategy, duplicates, tie-break).
    public typealias Admission = @Sendable (_ session: EndpointSession, _ endpointID: String, _ nonce: Int32) async -> Bool

    /// Whether we opened the channel.
    public nonisolated let isOutgoing: Bool

    /// The channel frames are read from; a bandwidth upgrade replaces it.
    var readChannel: any EndpointChannel
    var machine: ConnectionStateMachine
    let secure: SecureContextBox
    let writer: OutboundFrameWriter
    /// Where payload senders wait while a bandwidth upgrade holds writes.
    let gate: SendGate
    let sender: OutgoingPayloadSender
    let sink: IncomingPayloadSink
    /// The bandwidth upgrade of this connection.
    let upgrade: UpgradeCoordinator
    /// The connection's deadlines and the timers they are armed on.
    var deadlines: SessionDeadlines
    let timers: SessionTimers<SessionDeadlines.Timer>
    let clock: NearbyClock
    var endpointIDValue: String?
    var info: ConnectionInfo?
    var wasConnected = false
    /// Set once the state machine decided the connection is rejected (by the peer when `true`).
    var pendingRejection: Bool?
    var keepAliveSequence: UInt32 = 0
    /// When encryption went on here (the start of the plaintext keep-alive tolerance).
    var encryptionEnabledAt: Duration?
    /// When the session started (a clock reading): the connection request's wait is logged from it.
    var startedAt: Duration = .zero
    /// Whether a frame from the peer decrypted: the peer has switched, so it sends nothing in plaintext any more.
    var peerSentEncrypted = false
    /// The limits this session enforces.
    let limits: ResourceLimits
    /// Set once both sides accepted, readable without hopping onto the actor (the engine counts pending
    /// endpoints with it).
    nonisolated let reachedConnected = LockedValue(false)
    /// Set once the session ended, readable without hopping onto the actor (the engine's topology rules skip
    /// ended sessions).
    nonisolated let hasEnded = LockedValue(false)
    var ended = false
    /// Callers of ``waitUntilEnded()``.
    var endWaiters: [CheckedContinuation<Void, Never>] = []
    /// Timers of the connection's end and of reconnecting (``LinkTimer``).
    let linkTimers: SessionTimers<LinkTimer>
    /// Set once the peer asked for a safe disconnect and we confirmed: its closing the channel is the clean end.
    var peerLeaving = false
    /// Auto-reconnect: whether the channel broke and the endpoint waits for a new one.
    var reconnecting = false
    /// Auto-reconnect: why the channel broke last.
    var reconnectCause: NearbyError?
    /// Counts the channels read from; a frame or error from an older one is ignored.
    var channelGeneration = 0
    /// The read loop, waiting for a new channel while reconnecting.
    var channelWaiter: CheckedContinuation<Void, Never>?
    /// Auto-reconnect: closes the broken channel and, on the side that connected, seeks a new one. Owner: this
    /// session; it ends once a new channel is adopted or the window passed, and is cancelled when the session ends.
    var reconnectTask: Task<Void, Never>?
    /// Auto-reconnect, the side that was connected to: the handshake on a channel that introduced itself for this
    /// endpoint. Owner: this session; bounded by the handshake timeout, cancelled when the session ends.
    var reconnectHandshakeTask: Task<Void, Never>?
    /// Auto-resume: our payloads whose receiver has not said yet where they go on.
    var awaitingResume: Set<PayloadID> = []
    /// Auto-reconnect after the peer's process restarted: a new connection runs on the new channel, accepted on our
    /// side without asking the app; it ends as `reconnected`.
    var restarting = false
    /// Auto-resume across a restart of the receiver: the reconnect key of the connection each of our payloads started
    /// on (its resume token is made with it).
    var payloadKeys: [PayloadID: [UInt8]] = [:]
    /// Set when this session handed its channel over to the endpoint it reconnects: the channel is not closed.
    var releasesChannel = false
    /// Our endpoint ID (the introduction of a reconnect names it).
    let localEndpointID: String
    /// Auto-reconnect, the side that connected: opens a new channel to the peer (same route, or where discovery
    /// sees it now).
    let reconnectChannel: (@Sendable () async throws -> any EndpointChannel)?
    /// Auto-reconnect, the side that was connected to: the session of the endpoint a new channel introduced
    /// itself for.
    let reconnectTarget: (@Sendable (_ endpointID: String) async -> EndpointSession?)?
    var writerTask: Task<(any Error)?, Never>?
    /// Signalled when ``run()`` returns.
    private nonisolated let runFinished = CompletionSignal()
    var closeTask: Task<Void, Never>?
    let timeouts: Timeouts
    let admission: Admission?
    let onEvent: @Sendable (EndpointEvent) -> Void
    let onEnd: @Sendable (EndpointSession) -> Void
    var logger: Logger

    /// Creates a session. Call ``run()`` to start it.
    ///
    /// - Parameters:
    ///   - upgradeMediums: Mediums the connection may move to in a bandwidth upgrade (those whose
    ///     ``MediumDriver/supportsUpgradeListening`` is true). Empty: offers are refused.
    ///   - autoUpgrade: Whether an incoming (advertiser-side) session offers an upgrade once connected.
    ///   - localEndpointID: Our endpoint ID, sent in the CLIENT_INTRODUCTION of an upgrade.
    ///   - limits: The write deadline, the decision deadline and the range peer-chosen keep-alive timeouts are
    ///     clamped into.
    ///   - bufferBudget: The engine's budget of buffered BYTES payload bytes (``ResourceLimits/maxBufferedBytes``),
    ///     shared by its endpoints; `nil`: only the per-endpoint limit applies.
    ///   - clock: The clock every timer of the session sleeps on.
    ///   - reconnectChannel: Auto-reconnect, outgoing sessions: opens a new channel to the peer.
    ///   - reconnectTarget: Auto-reconnect, incoming sessions: finds the session a reconnecting channel is for.
    ///   - resumable: Partial files a dead process of ours kept for their senders (auto-resume across a restart).
    package init(
        channel: any EndpointChannel, machine: ConnectionStateMachine, keepAlive: KeepAliveSettings,
        receiveDirectory: URL, timeouts: Timeouts = .init(), limits: ResourceLimits = .init(),
        bufferBudget: BufferedBytesBudget? = nil, logger: Logger, incomingFileNaming: IncomingFileNaming? = nil,
        admission: Admission? = nil,
        upgradeMediums: [any MediumDriver] = [], autoUpgrade: Bool = true, localEndpointID: String = "",
        clock: NearbyClock = .continuous,
        reconnectChannel: (@Sendable () async throws -> any EndpointChannel)? = nil,
        reconnectTarget: (@Sendable (_ endpointID: String) async -> EndpointSession?)? = nil,
        resumable: ResumableFiles? = nil,
        onEvent: @escaping @Sendable (EndpointEvent) -> Void,
        onEnd: @escaping @Sendable (EndpointSession) -> Void = { _ in }
    ) {
        Self.live.withLock { $0 += 1 }
        self.localEndpointID = localEndpointID
        self.reconnectChannel = reconnectChannel
        self.reconnectTarget = reconnectTarget
        readChannel = channel
        self.machine = machine
        isOutgoing = machine.role == .outgoing
        requestNonce = machine.requestNonce
        self.clock = clock
        timers = SessionTimers(clock: clock)
        linkTimers = SessionTimers(clock: clock)
        deadlines = SessionDeadlines(
            keepAlive: keepAlive, connectionRequestTimeout: timeouts.connectionRequest(on: channel.medium),
            handshakeTimeout: timeouts.handshake, decisionTimeout: limits.pendingDecisionTimeout,
            writeTimeout: limits.writeTimeout, now: clock.now)
        self.timeouts = timeouts
        self.limits = limits
        self.admission = admission
        self.onEvent = onEvent
        self.onEnd = onEnd
        var logger = logger
        logger[metadataKey: "medium"] = "\(channel.medium)"
        logger[metadataKey: "peer"] = "\(channel.peerDescription)"
        self.logger = logger
        let secure = SecureContextBox()
        let writer = OutboundFrameWriter(channel: channel, secure: secure, clock: clock)
        let gate = SendGate()
        self.secure = secure
        self.writer = writer
        self.gate = gate
        sender = OutgoingPayloadSender(
            writer: writer, gate: gate, chunkSize: channel.medium.maxTransmitPacketSize, logger: logger, clock: clock,
            onEvent: onEvent)
        sink = IncomingPayloadSink(
            limits: limits, receiveDirectory: receiveDirectory, clock: clock, bufferBudget: bufferBudget,
            resumable: resumable, naming: incomingFileNaming, onEvent: onEvent)
        upgrade = UpgradeCoordinator(
            role: machine.role == .incoming ? .initiator : .responder, writer: writer, gate: gate,
            mediums: upgradeMediums, autoUpgrade: autoUpgrade, localEndpointID: localEndpointID, timeouts: timeouts,
            clock: clock, logger: logger)
    }

    deinit {
        Self.live.withLock { $0 -= 1 }
    }

    /// Sessions that exist now (tests check that ended connections go away).
    package static var liveCount: Int { live.withLock { $0 } }
    private static let live = LockedValue(0)

    /// The peer's endpoint ID, once known.
    public var endpointID: String? { endpointIDValue }
    /// The connection info, once the handshake is done.
    public var connectionInfo: ConnectionInfo? { info }
    /// Whether both sides accepted and the connection is up.
    public var isConnected: Bool { machine.isConnected && !ended }
    /// Whether the session is over.
    public var isEnded: Bool { ended }
    /// The nonce of our request (outgoing sessions).
    public nonisolated let requestNonce: Int32
    /// The medium the connection runs over now (it changes after a bandwidth upgrade).
    public var medium: MediumKind { readChannel.medium }

    /// Sets the endpoint ID an outgoing session reports for its peer.
    public func setPeerEndpointID(_ id: String) {
        endpointIDValue = id
        sender.peerEndpointID.withLock { $0 = id }
        logger[metadataKey: "endpoint_id"] = "\(id)"
    }

    /// Runs the session until the connection ends.
    public func run() async {
        defer { runFinished.signal() }
        // Ended before it ran (an outgoing request that lost the tie-break at once): its channel is closed already.
        guard !ended else { return }
        let writer = self.writer
        writer.onFailure { [weak self] failure in
            // A failed write drops every later frame: the channel is broken even if the read loop does not notice
            // (it may be waiting for the app to take a stream chunk).
            guard let self else { return }
            // Owner: none; it only hands the failure to the session and ends.
            Task { await self.writerFailed(failure) }
        }
        // Owner: this session (`writerTask`): the close task `end()` starts finishes the writer and awaits this; it
        // ends once the writer wrote or dropped what was queued before its end marker.
        writerTask = Task { await writer.run() }
        startedAt = clock.now
        arm(deadlines.start(outgoing: isOutgoing))
        if isOutgoing { await perform(machine.start()) }
        while !ended {
            if reconnecting {
                await waitForChannel()
                continue
            }
            let generation = channelGeneration
            do {
                guard let body = try await readChannel.readFrame() else {
                    guard generation == channelGeneration else { continue }
                    if peerLeaving {
                        end(nil)
                        break
                    }
                    if machine.isAwaitingDecisions {
                        let actions = machine.peerGone()
                        if case .rejected = actions.first { await perform(actions) }
                    }
                    channelBroke(NearbyError(.endpointIoError, "the peer closed the connection"))
                    continue
                }
                // A frame of a channel replaced meanwhile (auto-reconnect) is not for the new keys.
                guard generation == channelGeneration else { continue }
                await handle(body)
            } catch {
                guard generation == channelGeneration else { continue }
                channelBroke(Self.nearbyError(error, "reading from the peer failed"))
            }
        }
    }

    /// Returns once ``run()`` has returned.
    package nonisolated func runEnded() async {
        await runFinished.wait()
    }

    /// Our app's decision on the pending connection.
    public func decide(accept: Bool) async {
        await perform(machine.decide(accept: accept), fromApp: true)
    }

    /// The longest ``disconnect()`` waits for the channel to close.
    public static let disconnectReturnBound: Duration = .seconds(3)

    /// Waits for `task`, or for `bound` of `clock` when it takes longer (the task goes on).
    static func wait(for task: Task<Void, Never>, atMost bound: Duration, on clock: NearbyClock) async {
        let race = AsyncStream<Void>.makeStream()
        // Owner: this call, which cancels both racers once one of them yielded. The watcher ends when `task` ends
        // (it cannot end sooner: awaiting a task's value ignores cancellation), the timer at once when cancelled.
        let watcher = Task {
            await task.value
            race.continuation.yield()
        }
        // Owner: this call (see above); cancelled once either racer yielded, it ends at once.
        let timer = Task {
            try? await clock.sleep(for: bound)
            race.continuation.yield()
        }
        var iterator = race.stream.makeAsyncIterator()
        _ = await iterator.next()
        race.continuation.finish()
        watcher.cancel()
        timer.cancel()
    }

    /// Starts sending a payload; progress and the outcome arrive as ``EndpointEvent/transferUpdate(endpointID:update:isOutgoing:)``.
    /// Payloads of the same kind go out one after another; different kinds interleave.
    public func send(_ source: OutgoingPayloadSource, id: PayloadID) throws(NearbyError) {
        guard machine.isConnected, !ended else {
            throw NearbyError(.endpointUnknown, "not connected to \(endpointIDValue ?? "the endpoint")")
        }
        try sender.send(source, id: id)
        if let key = machine.terms.reconnectKey { payloadKeys[id] = key }
    }

    /// Cancels a payload in either direction; both sides see it as canceled.
    public func cancel(_ id: PayloadID) async -> Bool {
        if sender.cancel(id) { return true }
        if sink.isReceiving(id) {
            var followUps: [FollowUp] = []
            sink.cancel(id, host: self, into: &followUps)
            await complete(followUps)
            return true
        }
        return false
    }

    static func nearbyError(_ error: any Error, _ message: String) -> NearbyError {
        (error as? NearbyError) ?? NearbyError(.endpointIoError, message, cause: error)
    }
}
