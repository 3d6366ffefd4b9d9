import Foundation
import NearbyCore

/// Thrown when a test waited too long; tests bound every wait so that nothing hangs.
public struct TestTimeout: Error, CustomStringConvertible {
    /// What was waited for.
    public var description: String

    /// Creates the error.
    public init(description: String) { self.description = description }
}

/// Runs `operation`, throwing ``TestTimeout`` if it takes longer than `seconds`. On timeout the operation is
/// cancelled and abandoned rather than awaited, so even an operation that ignores cancellation cannot hang the run.
public func withTestTimeout<Value: Sendable>(
    _ seconds: Double = 10, _ what: String, _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let race = FirstResult<Value>()
    return try await withCheckedThrowingContinuation { continuation in
        race.set(continuation)
        // The timer ends as soon as the operation does: a timer left sleeping would hold the finished operation's
        // task (and what it allocated) for the whole timeout, which a loop of many bounded steps sees as memory
        // growth (the lifecycle stress test did).
        let work = TimerTask()
        let timer = Task {
            // DispatchTimerSleep: a cancelled Task.sleep would keep its timer armed for the whole timeout.
            do { try await DispatchTimerSleep.sleep(for: .milliseconds(Int(seconds * 1000))) } catch { return }
            race.finish(.failure(TestTimeout(description: "timed out after \(seconds) s waiting for \(what)")))
            work.cancel()
        }
        work.start {
            do { race.finish(.success(try await operation())) } catch { race.finish(.failure(error)) }
            timer.cancel()
        }
    }
}

/// Resumes a continuation once, with whichever result arrives first.
final class FirstResult<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Value, any Error>?

    func set(_ continuation: CheckedContinuation<Value, any Error>) {
        lock.withLock { self.continuation = continuation }
    }

    func finish(_ result: Result<Value, any Error>) {
        let pending = lock.withLock { () -> CheckedContinuation<Value, any Error>? in
            defer { continuation = nil }
            return continuation
        }
        pending?.resume(with: result)
    }
}
