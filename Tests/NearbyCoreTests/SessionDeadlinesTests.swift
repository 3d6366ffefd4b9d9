import NearbyCore
import Testing

/// ``SessionDeadlines`` as a value: which timers it arms and what a timer that fired means.
struct SessionDeadlinesTests {
    static let keepAlive = KeepAliveSettings(interval: .seconds(5), timeout: .seconds(30))

    static func deadlines(writeTimeout: Duration? = nil) -> SessionDeadlines {
        SessionDeadlines(
            keepAlive: keepAlive, connectionRequestTimeout: .seconds(2), handshakeTimeout: .seconds(15),
            decisionTimeout: .seconds(60), writeTimeout: writeTimeout, now: .zero)
    }

    static func idleWriter(lastWrite: Duration = .zero) -> SessionDeadlines.WriterStatus {
        .init(lastWrite: lastWrite, writeStartedAt: nil, isIdle: true, holdsKeepAlives: false)
    }

    @Test("An incoming session waits for the request, then for the handshake", .timeLimit(.minutes(5)))
    func phases() {
        var deadlines = Self.deadlines()
        #expect(deadlines.start(outgoing: false) == [
            .schedule(.phase, after: .seconds(2)), .schedule(.writeDeadline, after: .seconds(30)),
        ])
        #expect(deadlines.fired(.phase, now: .seconds(2), writer: Self.idleWriter()).expiry
            == .noConnectionRequest(.seconds(2)))
        let peerAsked = KeepAliveSettings(interval: .seconds(1), timeout: .seconds(4))
        #expect(deadlines.requestReceived(keepAlive: peerAsked) == [
            .schedule(.phase, after: .seconds(15)), .schedule(.writeDeadline, after: .seconds(4)),
        ])
        #expect(deadlines.fired(.phase, now: .seconds(15), writer: Self.idleWriter()).expiry == .handshake(.seconds(15)))
    }

    @Test("Once initiated the phase deadline goes, the decision deadline and the keep-alive timers come", .timeLimit(.minutes(5)))
    func initiated() {
        var deadlines = Self.deadlines()
        _ = deadlines.start(outgoing: true)
        deadlines.frameRead(at: .seconds(1))
        #expect(deadlines.initiated(now: .seconds(3)) == [
            .cancel(.phase), .schedule(.decision, after: .seconds(60)),
            .schedule(.keepAliveTimeout, after: .seconds(28)), .schedule(.keepAliveSend, after: .seconds(5)),
        ])
        #expect(deadlines.fired(.phase, now: .seconds(15), writer: Self.idleWriter()).expiry == nil)
        #expect(deadlines.decided() == [.cancel(.decision)])
        #expect(deadlines.fired(.decision, now: .seconds(63), writer: Self.idleWriter()).expiry == .decision)
    }

    @Test("The keep-alive timeout is re-armed for the time left after the last read, and expires after silence", .timeLimit(.minutes(5)))
    func keepAliveTimeout() {
        var deadlines = Self.deadlines()
        _ = deadlines.initiated(now: .zero)
        deadlines.frameRead(at: .seconds(10))
        let early = deadlines.fired(.keepAliveTimeout, now: .seconds(30), writer: Self.idleWriter())
        #expect(early.expiry == nil)
        #expect(early.actions == [.schedule(.keepAliveTimeout, after: .seconds(10))])
        #expect(deadlines.fired(.keepAliveTimeout, now: .seconds(40), writer: Self.idleWriter()).expiry
            == .silence(.seconds(30)))
    }

    @Test("While the app takes a stream chunk the keep-alive timeout does not count", .timeLimit(.minutes(5)))
    func streamDeliveryPausesTheTimeout() {
        var deadlines = Self.deadlines()
        _ = deadlines.initiated(now: .zero)
        deadlines.streamDelivery(started: true, at: .seconds(1))
        let held = deadlines.fired(.keepAliveTimeout, now: .seconds(100), writer: Self.idleWriter())
        #expect(held.expiry == nil)
        deadlines.streamDelivery(started: false, at: .seconds(100))
        let after = deadlines.fired(.keepAliveTimeout, now: .seconds(110), writer: Self.idleWriter())
        #expect(after.expiry == nil)
        #expect(after.actions == [.schedule(.keepAliveTimeout, after: .seconds(20))])
    }

    @Test("A KEEP_ALIVE is due only after an interval without writes, on an idle writer outside an upgrade drain", .timeLimit(.minutes(5)))
    func keepAliveSend() {
        var deadlines = Self.deadlines()
        _ = deadlines.initiated(now: .zero)
        let recent = deadlines.fired(.keepAliveSend, now: .seconds(5), writer: Self.idleWriter(lastWrite: .seconds(3)))
        #expect(recent.expiry == nil)
        #expect(recent.actions == [.schedule(.keepAliveSend, after: .seconds(3))])
        let due = deadlines.fired(.keepAliveSend, now: .seconds(8), writer: Self.idleWriter(lastWrite: .seconds(3)))
        #expect(due.expiry == .sendKeepAlive)
        #expect(due.actions == [.schedule(.keepAliveSend, after: .seconds(5))])
        let busy = SessionDeadlines.WriterStatus(lastWrite: .zero, writeStartedAt: nil, isIdle: false, holdsKeepAlives: false)
        #expect(deadlines.fired(.keepAliveSend, now: .seconds(8), writer: busy).expiry == nil)
        let draining = SessionDeadlines.WriterStatus(lastWrite: .zero, writeStartedAt: nil, isIdle: true, holdsKeepAlives: true)
        #expect(deadlines.fired(.keepAliveSend, now: .seconds(8), writer: draining).expiry == nil)
    }

    @Test("A write that outlives the write deadline expires; otherwise the deadline is re-armed", .timeLimit(.minutes(5)))
    func writeDeadline() {
        var deadlines = Self.deadlines(writeTimeout: .seconds(10))
        #expect(deadlines.start(outgoing: true).contains(.schedule(.writeDeadline, after: .seconds(10))))
        let idle = deadlines.fired(.writeDeadline, now: .seconds(10), writer: Self.idleWriter())
        #expect(idle.expiry == nil)
        #expect(idle.actions == [.schedule(.writeDeadline, after: .seconds(10))])
        let writing = SessionDeadlines.WriterStatus(
            lastWrite: .zero, writeStartedAt: .seconds(14), isIdle: false, holdsKeepAlives: false)
        let young = deadlines.fired(.writeDeadline, now: .seconds(20), writer: writing)
        #expect(young.expiry == nil)
        #expect(young.actions == [.schedule(.writeDeadline, after: .seconds(4))])
        #expect(deadlines.fired(.writeDeadline, now: .seconds(24), writer: writing).expiry == .stalledWrite(.seconds(10)))
    }

    /// A peer that floods us and stops reading: our writer is stuck and, held back by it, our reads stop too, so the
    /// silence and the write deadline pass together. On a busy machine the keep-alive timer may run first (the
    /// integration test `StalledPeerTests` saw "nothing heard" under load); the stuck write is still named.
    @Test("Silence while a write is stuck past its own deadline is reported as the stalled write", .timeLimit(.minutes(5)))
    func silenceBehindAStuckWrite() {
        var deadlines = Self.deadlines(writeTimeout: .seconds(30))
        _ = deadlines.initiated(now: .zero)
        deadlines.frameRead(at: .seconds(11))
        let stuck = SessionDeadlines.WriterStatus(
            lastWrite: .seconds(9), writeStartedAt: .seconds(10), isIdle: false, holdsKeepAlives: false)
        #expect(deadlines.fired(.keepAliveTimeout, now: .seconds(41), writer: stuck).expiry == .stalledWrite(.seconds(30)))
        // A write that started later has not outlived its deadline: the silence is the peer's.
        let young = SessionDeadlines.WriterStatus(
            lastWrite: .seconds(30), writeStartedAt: .seconds(35), isIdle: false, holdsKeepAlives: false)
        #expect(deadlines.fired(.keepAliveTimeout, now: .seconds(41), writer: young).expiry == .silence(.seconds(30)))
    }
}
