import Foundation

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
