import Foundation
import NearbyCore
import UnixSignals

/// Waits for SIGINT or SIGTERM.
enum Signals {
    /// Returns the number of the first SIGINT or SIGTERM that arrives from now on. Both signals are ignored from the
    /// first call on, so a second one does not kill the process while it shuts down.
    static func waitForTermination() async -> Int32 {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        for await signal in await UnixSignalsSequence(trapping: .sigint, .sigterm) {
            return signal.rawValue
        }
        return SIGTERM  // the sequence never ends while it is iterated
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
final class TimeoutRace<T: Sendable>: Sendable {
    private let continuation = LockedValue<CheckedContinuation<T, any Error>?>(nil)

    func set(_ continuation: CheckedContinuation<T, any Error>) {
        self.continuation.withLock { $0 = continuation }
    }

    func finish(_ result: Result<T, any Error>) {
        let pending = continuation.withLock { continuation in
            defer { continuation = nil }
            return continuation
        }
        pending?.resume(with: result)
    }
}
