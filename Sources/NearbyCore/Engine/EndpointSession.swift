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
    ///   - clock: The clock every timer of the session sleeps on.
    package init(
        channel: any EndpointChannel, machine: ConnectionStateMachine, keepAlive: KeepAliveSettings,
        receiveDirectory: URL, timeouts: Timeouts = .init(), limits: ResourceLimits = .init(), logger: Logger,
        incomingFileNaming: IncomingFileNaming? = nil, admission: Admission? = nil,
        upgradeMediums: [any MediumDriver] = [], autoUpgrade: Bool = true, localEndpointID: String = "",
        clock: NearbyClock = .continuous,
        onEvent: @escaping @Sendable (EndpointEvent) -> Void,
        onEnd: @escaping @Sendable (EndpointSession) -> Void = { _ in }
    ) {
        readChannel = channel
        self.machine = machine
        isOutgoing = machine.role == .outgoing
        requestNonce = machine.requestNonce
        self.clock = clock
        timers = SessionTimers(clock: clock)
        deadlines = SessionDeadlines(
            keepAlive: keepAlive, connectionRequestTimeout: timeouts.connectionRequest,
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
            limits: limits, receiveDirectory: receiveDirectory, clock: clock, naming: incomingFileNaming, onEvent: onEvent)
        upgrade = UpgradeCoordinator(
            role: machine.role == .incoming ? .initiator : .responder, writer: writer, gate: gate,
            mediums: upgradeMediums, autoUpgrade: autoUpgrade, localEndpointID: localEndpointID, timeouts: timeouts,
            clock: clock, logger: logger)
    }

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
            // A failed write drops every later frame: the session is over even if the read loop does not notice
            // (it may be waiting for the app to take a stream chunk).
            guard let self else { return }
            Task { await self.end(failure) }
        }
        writerTask = Task { await writer.run() }
        arm(deadlines.start(outgoing: isOutgoing))
        if isOutgoing { await perform(machine.start()) }
        while !ended {
            do {
                guard let body = try await readChannel.readFrame() else {
                    if machine.isAwaitingDecisions {
                        let actions = machine.peerGone()
                        if case .rejected = actions.first { await perform(actions) }
                    }
                    await end(NearbyError(.endpointIoError, "the peer closed the connection"))
                    break
                }
                await handle(body)
            } catch {
                await end(Self.nearbyError(error, "reading from the peer failed"))
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

    /// Says goodbye and closes the connection; returns once the channel is closed, and always within
    /// ``disconnectReturnBound``: a peer that stopped reading cannot hold it (the goodbye is queued without
    /// waiting, and the channel is closed under a stuck write in the background).
    public func disconnect() async {
        if !ended {
            if machine.isConnected || machine.isAwaitingDecisions {
                writer.post(writer.item(OfflineFrames.disconnection()))
            }
            await end(nil, closeDelay: timeouts.disconnectDelay)
        }
        if let closeTask { await Self.wait(for: closeTask, atMost: Self.disconnectReturnBound, on: clock) }
    }

    /// The longest ``disconnect()`` waits for the channel to close.
    public static let disconnectReturnBound: Duration = .seconds(3)

    /// Waits for `task`, or for `bound` of `clock` when it takes longer (the task goes on).
    private static func wait(for task: Task<Void, Never>, atMost bound: Duration, on clock: NearbyClock) async {
        let race = AsyncStream<Void>.makeStream()
        let watcher = Task {
            await task.value
            race.continuation.yield()
        }
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
    }

    /// Cancels a payload in either direction; both sides see it as canceled.
    public func cancel(_ id: PayloadID) async -> Bool {
        if sender.cancel(id) { return true }
        if sink.isReceiving(id) {
            await sink.cancel(id, host: self)
            return true
        }
        return false
    }

    static func nearbyError(_ error: any Error, _ message: String) -> NearbyError {
        (error as? NearbyError) ?? NearbyError(.endpointIoError, message, cause: error)
    }
}
