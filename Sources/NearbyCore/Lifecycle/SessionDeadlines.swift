/// The deadlines of one connection as a value: which timers must be armed, and what a timer that fired means.
///
/// The session tells it what happened (start, the peer's request, the handshake's end, the decisions, frames
/// read) and arms the ``Action``s it returns on its clock; when a timer fires, ``fired(_:now:writer:)`` says
/// whether a deadline passed (an ``Expiry``) and re-arms what must go on. Nothing polls: keep-alive and write
/// deadlines are re-armed for the time that is left, counted from the last frame read or written.
package struct SessionDeadlines: Sendable {
    /// The session's timers.
    package enum Timer: Hashable, Sendable {
        /// The connection request (incoming) or the handshake must be done by then.
        case phase
        /// Both sides must have accepted or rejected by then.
        case decision
        /// The peer must have sent something by then.
        case keepAliveTimeout
        /// Time to send our KEEP_ALIVE, unless we wrote something since.
        case keepAliveSend
        /// The write under way must have finished by then.
        case writeDeadline
    }

    /// What the session does with its timers.
    package enum Action: Hashable, Sendable {
        /// Arm `timer` to fire after the duration (replacing the armed one).
        case schedule(Timer, after: Duration)
        /// Disarm `timer`.
        case cancel(Timer)
    }

    /// A deadline that passed, or a keep-alive that is due.
    package enum Expiry: Hashable, Sendable {
        /// No connection request within the duration (incoming sessions).
        case noConnectionRequest(Duration)
        /// The handshake did not finish within the duration.
        case handshake(Duration)
        /// Nobody decided within ``ResourceLimits/pendingDecisionTimeout``.
        case decision
        /// Nothing heard from the peer for the keep-alive timeout.
        case silence(Duration)
        /// A write did not finish within the write deadline.
        case stalledWrite(Duration)
        /// We have written nothing for the keep-alive interval: send a KEEP_ALIVE.
        case sendKeepAlive
    }

    /// What the writer reports when a keep-alive or write timer fires.
    package struct WriterStatus: Sendable {
        /// When a frame was last written.
        package var lastWrite: Duration
        /// When the write under way started, if one is.
        package var writeStartedAt: Duration?
        /// Whether nothing is being written or waiting to be.
        package var isIdle: Bool
        /// Whether KEEP_ALIVEs are held back (the old channel drains during a bandwidth upgrade).
        package var holdsKeepAlives: Bool

        /// Makes a status.
        package init(lastWrite: Duration, writeStartedAt: Duration?, isIdle: Bool, holdsKeepAlives: Bool) {
            self.lastWrite = lastWrite
            self.writeStartedAt = writeStartedAt
            self.isIdle = isIdle
            self.holdsKeepAlives = holdsKeepAlives
        }
    }

    private enum Phase { case awaitingRequest, handshake }

    private let connectionRequestTimeout: Duration
    private let handshakeTimeout: Duration
    private let decisionTimeout: Duration
    private let writeTimeout: Duration?
    /// The keep-alive in force (the peer's request may change it).
    package private(set) var keepAlive: KeepAliveSettings
    private var phase: Phase?
    private var lastRead: Duration
    private var deliveringStreamChunk = false

    /// - Parameters:
    ///   - writeTimeout: How long one write may take; `nil`: the keep-alive timeout.
    ///   - now: The clock's time now (the start of the keep-alive count).
    package init(
        keepAlive: KeepAliveSettings, connectionRequestTimeout: Duration, handshakeTimeout: Duration,
        decisionTimeout: Duration, writeTimeout: Duration?, now: Duration
    ) {
        self.keepAlive = keepAlive
        self.connectionRequestTimeout = connectionRequestTimeout
        self.handshakeTimeout = handshakeTimeout
        self.decisionTimeout = decisionTimeout
        self.writeTimeout = writeTimeout
        lastRead = now
    }

    /// The longest a write may take.
    package var writeDeadline: Duration { writeTimeout ?? keepAlive.timeout }

    /// The session starts: an outgoing one has the handshake to finish, an incoming one waits for the request.
    package mutating func start(outgoing: Bool) -> [Action] {
        phase = outgoing ? .handshake : .awaitingRequest
        return [
            .schedule(.phase, after: outgoing ? handshakeTimeout : connectionRequestTimeout),
            .schedule(.writeDeadline, after: writeDeadline),
        ]
    }

    /// The peer's connection request arrived with the keep-alive to use; the handshake must follow.
    package mutating func requestReceived(keepAlive: KeepAliveSettings) -> [Action] {
        self.keepAlive = keepAlive
        phase = .handshake
        return [.schedule(.phase, after: handshakeTimeout), .schedule(.writeDeadline, after: writeDeadline)]
    }

    /// The handshake is done: the decisions are due and the keep-alive starts.
    package mutating func initiated(now: Duration) -> [Action] {
        phase = nil
        let sinceRead = now - lastRead
        return [
            .cancel(.phase),
            .schedule(.decision, after: decisionTimeout),
            .schedule(.keepAliveTimeout, after: max(.zero, keepAlive.timeout - sinceRead)),
            .schedule(.keepAliveSend, after: keepAlive.interval),
        ]
    }

    /// Both sides decided (connected or rejected).
    package mutating func decided() -> [Action] { [.cancel(.decision)] }

    /// A frame arrived from the peer.
    package mutating func frameRead(at now: Duration) { lastRead = now }

    /// The channel broke and the endpoint waits for a new one (auto-reconnect): no keep-alive or write deadline
    /// counts meanwhile (the reconnect window does).
    package mutating func linkBroke() -> [Action] {
        [.cancel(.keepAliveTimeout), .cancel(.keepAliveSend), .cancel(.writeDeadline)]
    }

    /// A new channel replaced the broken one at `now`: the keep-alive and write deadlines count again.
    package mutating func reconnected(now: Duration) -> [Action] {
        lastRead = now
        return [
            .schedule(.keepAliveTimeout, after: keepAlive.timeout), .schedule(.keepAliveSend, after: keepAlive.interval),
            .schedule(.writeDeadline, after: writeDeadline),
        ]
    }

    /// The read loop waits for the app to take a stream chunk (`started`) or goes on; the keep-alive timeout does
    /// not count meanwhile, and counts again from when the loop resumed.
    package mutating func streamDelivery(started: Bool, at now: Duration) {
        deliveringStreamChunk = started
        if !started { lastRead = now }
    }

    /// `timer` fired at `now`: the deadline that passed (if any) and the timers to arm again.
    package mutating func fired(_ timer: Timer, now: Duration, writer: WriterStatus) -> (expiry: Expiry?, actions: [Action]) {
        switch timer {
        case .phase:
            switch phase {
            case .awaitingRequest: return (.noConnectionRequest(connectionRequestTimeout), [])
            case .handshake: return (.handshake(handshakeTimeout), [])
            case nil: return (nil, [])
            }
        case .decision:
            return (.decision, [])
        case .keepAliveTimeout:
            if deliveringStreamChunk { return (nil, [.schedule(.keepAliveTimeout, after: keepAlive.timeout)]) }
            let silent = now - lastRead
            if silent >= keepAlive.timeout {
                // A peer that stops reading goes unheard too (our reads wait for room in the stuck writer), so both
                // deadlines pass together; which timer runs first on a busy machine is chance. The stuck write is
                // the cause when it outlived its own deadline as well.
                if let started = writer.writeStartedAt, now - started >= writeDeadline {
                    return (.stalledWrite(writeDeadline), [])
                }
                return (.silence(keepAlive.timeout), [])
            }
            return (nil, [.schedule(.keepAliveTimeout, after: keepAlive.timeout - silent)])
        case .keepAliveSend:
            let sinceWrite = now - writer.lastWrite
            if sinceWrite < keepAlive.interval {
                return (nil, [.schedule(.keepAliveSend, after: keepAlive.interval - sinceWrite)])
            }
            // A busy writer is proof of life already; an idle one gets a keep-alive.
            let due: Expiry? = writer.isIdle && !writer.holdsKeepAlives ? .sendKeepAlive : nil
            return (due, [.schedule(.keepAliveSend, after: keepAlive.interval)])
        case .writeDeadline:
            let deadline = writeDeadline
            guard let started = writer.writeStartedAt else { return (nil, [.schedule(.writeDeadline, after: deadline)]) }
            let busy = now - started
            if busy >= deadline { return (.stalledWrite(deadline), []) }
            return (nil, [.schedule(.writeDeadline, after: deadline - busy)])
        }
    }
}
