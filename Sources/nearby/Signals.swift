import Dispatch
import Foundation

/// Waits for SIGINT or SIGTERM.
enum Signals {
    static func waitForTermination() async -> Int32 {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        return await withCheckedContinuation { continuation in
            let queue = DispatchQueue(label: "nearby.signals")
            let resumed = NSLock()
            nonisolated(unsafe) var done = false
            // All sources exist before any runs: a handler reads the list while a signal may already be arriving
            // (the list was once appended to after the first source was resumed, a data race TSan reported).
            let numbers = [SIGINT, SIGTERM]
            nonisolated(unsafe) let sources = numbers.map { DispatchSource.makeSignalSource(signal: $0, queue: queue) }
            for (number, source) in zip(numbers, sources) {
                source.setEventHandler {
                    resumed.lock()
                    defer { resumed.unlock() }
                    guard !done else { return }
                    done = true
                    sources.forEach { $0.cancel() }
                    continuation.resume(returning: number)
                }
            }
            sources.forEach { $0.resume() }
        }
    }
}

/// Runs `body`, failing with `message` when it takes longer than `seconds` (no limit when nil). On timeout the
/// body is cancelled and left behind: the caller is about to exit.
func withTimeout<T: Sendable>(_ seconds: Double?, _ message: String, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    guard let seconds else { return try await body() }
    let race = TimeoutRace<T>()
    return try await withCheckedThrowingContinuation { continuation in
        race.set(continuation)
        let work = Task {
            do { race.finish(.success(try await body())) } catch { race.finish(.failure(error)) }
        }
        Task {
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            race.finish(.failure(CLIFailure(message)))
            work.cancel()
        }
    }
}

/// Resumes a continuation once, with whichever result comes first.
final class TimeoutRace<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, any Error>?

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        lock.withLock { self.continuation = continuation }
    }

    func finish(_ result: Result<T, any Error>) {
        let pending = lock.withLock { () -> CheckedContinuation<T, any Error>? in
            defer { continuation = nil }
            return continuation
        }
        pending?.resume(with: result)
    }
}
