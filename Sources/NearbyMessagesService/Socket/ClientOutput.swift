import NearbyCore

/// The bytes waiting to be written to one client of ``MessageServiceServer``, against its limit.
///
/// - Event lines are admitted while what waits stays within the limit (one is always admitted when nothing waits);
///   the first event line beyond it closes the output for good, and the caller disconnects the client (it does not
///   read what it is sent).
/// - Responses are always admitted: there is one per request, and the connection's reader waits for room
///   (``waitForRoom()``) before it reads the next request, so a client that sends requests without reading the
///   responses holds itself back instead of growing the queue.
/// - ``waitForRoom()`` returns once what waits leaves room for the longest event line within the limit (or the
///   output closed): the service paces every event on it (for at most ``roomWait`` each), so a client that reads,
///   however slowly, is never dropped for a burst of large events, while one that stops reading is dropped once it
///   has not made room for ``roomWait``.
final class ClientOutput: Sendable {
    /// What became of a line offered for writing.
    enum Admission: Equatable {
        /// Queued; ``ClientOutput/written(_:)`` must be called once it is written.
        case queued
        /// Over the limit: the client is to be disconnected (`waiting` bytes were still unwritten). Reported once.
        case overflowed(waiting: Int)
        /// The output already overflowed or closed; the line is dropped.
        case closed
    }

    /// What kind of line is offered.
    enum Kind: Sendable {
        /// An event: subject to the limit.
        case event
        /// A response to a request: always admitted.
        case response
    }

    /// The most bytes that may wait.
    let limit: Int
    /// What may wait for ``waitForRoom()`` to return: the limit less the longest event line.
    let roomThreshold: Int
    private let state = LockedValue(State())

    private struct State {
        var waiting = 0
        var closed = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0

        /// Takes every waiter (to be resumed after the lock).
        mutating func takeWaiters() -> [CheckedContinuation<Void, Never>] {
            defer { waiters = [:] }
            return Array(waiters.values)
        }
    }

    init(limit: Int, longestLine: Int = ServiceCodec.maximumEventLineLength) {
        self.limit = limit
        roomThreshold = max(0, limit - longestLine)
    }

    /// Bytes waiting.
    var waiting: Int { state.withLock { $0.waiting } }

    /// Offers a line of `count` bytes.
    func add(_ count: Int, kind: Kind = .event) -> Admission {
        let (admission, wake) = state.withLock { state -> (Admission, [CheckedContinuation<Void, Never>]) in
            if state.closed { return (.closed, []) }
            if kind == .event, state.waiting > 0, state.waiting + count > limit {
                state.closed = true
                return (.overflowed(waiting: state.waiting), state.takeWaiters())
            }
            state.waiting += count
            return (.queued, [])
        }
        for waiter in wake { waiter.resume() }
        return admission
    }

    /// A queued line of `count` bytes was written.
    func written(_ count: Int) {
        let wake = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.waiting -= count
            guard state.waiting <= roomThreshold else { return [] }
            return state.takeWaiters()
        }
        for waiter in wake { waiter.resume() }
    }

    /// Closes the output (the connection ended): nothing more is queued and every ``waitForRoom()`` returns.
    func close() {
        let wake = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            return state.takeWaiters()
        }
        for waiter in wake { waiter.resume() }
    }

    /// Returns once what waits is at most ``roomThreshold`` bytes, the output is closed, or the task is cancelled.
    func waitForRoom() async {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.closed || state.waiting <= roomThreshold || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }

    /// ``waitForRoom()``, for at most `bound`: a client that does not make room within it is judged by the limit
    /// (what is sent next may overflow and disconnect it).
    func waitForRoom(atMost bound: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForRoom() }
            group.addTask { try? await NearbyClock.continuous.sleep(for: bound) }
            await group.next()
            group.cancelAll()
        }
    }

    /// How long the service waits for a slow client's room before it sends an event anyway.
    static let roomWait: Duration = .seconds(5)
}
