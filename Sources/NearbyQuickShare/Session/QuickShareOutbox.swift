import NearbyCore

/// Runs I/O operations (frames and payloads to send, cancellations, disconnections) one at a time, in the order
/// they were enqueued, on one worker task. The session driver decides without suspending and enqueues what its
/// decision needs, so the actions of one decision keep their order and nothing interleaves with them.
final class QuickShareOutbox: Sendable {
    typealias Operation = @Sendable () async -> Void

    private let continuation: AsyncStream<Operation>.Continuation
    private let worker: Task<Void, Never>

    init() {
        let (stream, continuation) = AsyncStream<Operation>.makeStream()
        self.continuation = continuation
        // Owner: this outbox; it ends when `close()` finishes the stream, and `close()` awaits it.
        worker = Task {
            for await operation in stream { await operation() }
        }
    }

    /// Queues `operation` behind every earlier one.
    func enqueue(_ operation: @escaping Operation) {
        continuation.yield(operation)
    }

    /// Runs what is queued, then stops the worker and waits for it.
    func close() async {
        continuation.finish()
        await worker.value
    }
}
