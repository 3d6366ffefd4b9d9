import Foundation

/// Polls `probe` every 20 ms until it returns a value; throws after `seconds` (a bound, never a timing assertion).
func eventually<Value>(
    _ seconds: Double, _ what: @autoclosure () -> String, _ probe: () throws -> Value?
) async throws -> Value {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while true {
        if let value = try probe() { return value }
        if ContinuousClock.now > deadline {
            throw IntegrationFailure("waited \(seconds) s for \(what())")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Runs blocking work (socket reads, child processes) on its own thread, off the small cooperative pool that the
/// engine under test needs.
func onOwnThread<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.start()
    }
}
