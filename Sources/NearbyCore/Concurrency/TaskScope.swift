import Foundation

/// The owner of a set of tasks: each ``spawn(_:)`` runs as a child of one root task (a discarding task group), so
/// nothing it starts outlives it unobserved.
///
/// Objects that need work in the background (a manager's event router, a medium's accept loop, a session's read
/// loop) hold a scope instead of starting `Task { }`s: ``shutdown()`` cancels every child and returns only when all
/// of them ended, and ``cancel()`` (safe in `deinit`: it starts nothing) cancels them without waiting. After either,
/// ``spawn(_:)`` runs nothing and returns `false`. docs/ARCHITECTURE.md ("Who owns which tasks") lists the scopes.
///
/// A child that must be stopped on its own is started with ``spawnCancellable(_:)``. ``waitUntilIdle()`` waits for
/// the children running now without closing the scope. A scope released by its owner closes itself: its root ends
/// once the children still running have.
package final class TaskScope: Sendable {
    private let jobs = JobQueue()
    /// The root: this scope owns it and awaits it in ``shutdown()``; it ends once the scope is closed and every
    /// child ended.
    private let root: Task<Void, Never>

    /// Creates a scope; its root task starts at once and waits for children.
    package init() {
        let jobs = self.jobs
        root = Task {  // Owner: this scope (`shutdown()` awaits it; `cancel()` ends it).
            await withDiscardingTaskGroup { group in
                while let batch = await jobs.next() {
                    for body in batch {
                        group.addTask {
                            await body()
                            jobs.childEnded()
                        }
                    }
                }
            }
        }
    }

    deinit {
        jobs.close()
    }

    /// Runs `body` as a child of this scope; `false` (and `body` never runs) once the scope is shut down. A
    /// `true` is a promise: `body` runs, cancelled at once if the scope is cancelled before it starts.
    @discardableResult
    package func spawn(_ body: @escaping @Sendable () async -> Void) -> Bool {
        jobs.add(body)
    }

    /// Runs `body` as a child of this scope that can also be cancelled on its own through the returned handle;
    /// `nil` (and `body` never runs) once the scope is shut down.
    @discardableResult
    package func spawnCancellable(_ body: @escaping @Sendable () async -> Void) -> ChildTask? {
        let handle = ChildTask()
        let started = spawn {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await body() }
                group.addTask { await handle.waitUntilCancelled() }
                _ = await group.next()
                group.cancelAll()
            }
            handle.markEnded()
        }
        return started ? handle : nil
    }

    /// Cancels every child and returns once all of them (and the root) ended; later spawns run nothing.
    package func shutdown() async {
        cancel()
        await root.value
    }

    /// Lets the running children finish (none is cancelled) and returns once all of them ended; later spawns run
    /// nothing.
    package func drain() async {
        jobs.close()
        await root.value
    }

    /// Cancels every child without waiting; later spawns run nothing. Starts nothing, so `deinit` may call it.
    package func cancel() {
        jobs.close()
        root.cancel()
    }

    /// Whether ``shutdown()``, ``drain()`` or ``cancel()`` was called.
    package var isClosed: Bool { jobs.isClosed }

    /// How many children were spawned and have not ended.
    package var runningCount: Int { jobs.runningCount }

    /// Returns once no child is running (children spawned meanwhile are waited for too); the scope stays open.
    package func waitUntilIdle() async {
        await jobs.waitUntilIdle()
    }
}

/// The bodies spawned and not yet started, handed to the root task in batches.
private final class JobQueue: Sendable {
    typealias Body = @Sendable () async -> Void

    private struct State {
        var pending: [Body] = []
        var closed = false
        var waiter: CheckedContinuation<[Body]?, Never>?
        /// Bodies added and not yet ended.
        var running = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = LockedValue(State())

    var isClosed: Bool { state.withLock { $0.closed } }
    var runningCount: Int { state.withLock { $0.running } }

    /// A child's body returned.
    func childEnded() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.running -= 1
            guard state.running == 0 else { return [] }
            defer { state.idleWaiters = [] }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let idle = state.withLock { state -> Bool in
                guard state.running > 0 else { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    /// Queues `body`; `false` once closed.
    func add(_ body: @escaping Body) -> Bool {
        let (added, wake) = state.withLock { state -> (Bool, CheckedContinuation<[Body]?, Never>?) in
            guard !state.closed else { return (false, nil) }
            state.running += 1
            guard let waiter = state.waiter else {
                state.pending.append(body)
                return (true, nil)
            }
            state.waiter = nil
            return (true, waiter)
        }
        wake?.resume(returning: [body])
        return added
    }

    /// No more bodies; the root's loop ends once it took those queued.
    func close() {
        let wake = state.withLock { state -> CheckedContinuation<[Body]?, Never>? in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        wake?.resume(returning: nil)
    }

    /// The next bodies to start; `nil` once closed and empty. Cancellation of the root does not end the wait by
    /// itself (``TaskScope/cancel()`` closes the queue first), so a body queued before is never lost.
    func next() async -> [Body]? {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> [Body]?? in
                if !state.pending.isEmpty {
                    defer { state.pending = [] }
                    return .some(state.pending)
                }
                if state.closed { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let now { continuation.resume(returning: now) }
        }
    }
}

/// A handle on one child of a ``TaskScope``, to cancel it on its own.
package final class ChildTask: Sendable {
    private struct State {
        var cancelled = false
        var ended = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = LockedValue(State())

    init() {}

    /// Whether the child's body returned (or was cancelled and returned).
    package var hasEnded: Bool { state.withLock { $0.ended } }

    /// Cancels the child (its body sees `Task.isCancelled`); does nothing once it ended.
    package func cancel() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.cancelled = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func markEnded() {
        state.withLock { $0.ended = true }
    }

    /// Returns once ``cancel()`` was called or the waiting task is cancelled.
    func waitUntilCancelled() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.cancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            cancel()
        }
    }
}
