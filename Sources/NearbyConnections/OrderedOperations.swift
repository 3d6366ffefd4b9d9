import NearbyCore

/// Runs a manager's control operations (start and stop of advertising and discovery) one at a time, in the order they
/// were called, so a fire-and-forget `stopAdvertising()` is done before a later `startAdvertising` begins.
///
/// One runner task takes the operations from a queue. Its owner is the manager: ``finish()`` (from the manager's
/// `deinit` or `shutdown()`) lets it run what was queued and end, and ``runnerEnded()`` awaits that.
final class OrderedOperations: Sendable {
    typealias Operation = @Sendable () async -> Void

    private let queue: AsyncStream<Operation>.Continuation
    private let runner: Task<Void, Never>

    init() {
        let (operations, queue) = AsyncStream<Operation>.makeStream()
        self.queue = queue
        // Owner: the manager through this object; it ends once `finish()` was called and the queue is drained.
        runner = Task {
            for await operation in operations { await operation() }
        }
    }

    /// Starts `operation` once every earlier one has finished; returns at once. After ``finish()`` it does not run.
    func enqueue(_ operation: @escaping Operation) {
        queue.yield(operation)
    }

    /// Runs `operation` once every earlier one has finished, and returns when it has.
    /// - Throws: `CancellationError` when the manager is gone and the operation cannot run.
    func runAndWait(_ operation: @escaping Operation) async throws {
        try await run { await operation() }
    }

    /// Runs `operation` once every earlier one has finished, and returns its result.
    /// - Throws: what `operation` throws, or `CancellationError` when the manager is gone and it cannot run.
    ///
    /// The result comes back through a handoff continuation (`withHandoffContinuation`): it is built on the runner's
    /// thread (advertising sessions, say), and a plain continuation's hand-off is invisible to ThreadSanitizer, which
    /// then reported the caller's first read of a session as a race with its initialisation.
    func run<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await withHandoffContinuation { (resumer: HandoffResumer<Result>) in
            let outcome = queue.yield {
                do {
                    resumer.resume(returning: try await operation())
                } catch {
                    resumer.resume(throwing: error)
                }
            }
            if case .terminated = outcome { resumer.resume(throwing: CancellationError()) }
        }
    }

    /// No more operations: those queued still run, then the runner ends.
    func finish() {
        queue.finish()
    }

    /// Returns once the runner ended (after ``finish()``).
    func runnerEnded() async {
        await runner.value
    }
}
