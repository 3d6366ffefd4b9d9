/// The resuming end of `withHandoffContinuation`: delivers one result, produced on any thread, to the awaiting
/// task.
///
/// The result travels through a `LockedValue` (a pthread mutex), not through the continuation itself. When a
/// continuation is resumed before its task has reached the suspension point, the task picks the result up through
/// an atomic inside the Swift runtime that ThreadSanitizer cannot see (swiftlang/swift#57803), and every later read
/// of the result's storage (the elements of an array built on the other thread) is reported as a data race. The
/// lock gives TSan the happens-before edge the runtime does not show it.
public final class HandoffResumer<Value: Sendable>: @unchecked Sendable {
    private let slot = LockedValue<Result<Value, any Error>?>(nil)
    private let continuation: CheckedContinuation<Void, Never>

    fileprivate init(_ continuation: CheckedContinuation<Void, Never>) {
        self.continuation = continuation
    }

    /// Delivers `result`; only the first call of `resume` has an effect.
    public func resume(with result: Result<Value, any Error>) {
        let first = slot.withLock { stored -> Bool in
            guard stored == nil else { return false }
            stored = result
            return true
        }
        if first { continuation.resume() }
    }

    /// Delivers `value`.
    public func resume(returning value: Value) {
        resume(with: .success(value))
    }

    /// Delivers `error`.
    public func resume(throwing error: any Error) {
        resume(with: .failure(error))
    }

    fileprivate func take() throws -> Value {
        guard let result = slot.withLock({ $0 }) else {
            preconditionFailure("a handoff continuation resumed without a result")
        }
        return try result.get()
    }
}

/// Suspends until `body`'s resumer is given a result (on any thread), and returns or throws it.
///
/// Use it instead of `withCheckedThrowingContinuation` where the result is built on another thread (a dispatch
/// queue, a C callback): the hand-off is then visible to ThreadSanitizer (see `HandoffResumer`). Like a checked
/// continuation, the resumer must be resumed exactly once; later resumes are ignored.
public func withHandoffContinuation<Value: Sendable>(
    isolation: isolated (any Actor)? = #isolation, _ body: (HandoffResumer<Value>) -> Void
) async throws -> Value {
    var resumer: HandoffResumer<Value>?
    await withCheckedContinuation(isolation: isolation) { (continuation: CheckedContinuation<Void, Never>) in
        let made = HandoffResumer<Value>(continuation)
        resumer = made
        body(made)
    }
    guard let resumer else { preconditionFailure("withCheckedContinuation ran its body") }
    return try resumer.take()
}
