import Foundation
import NearbyCore

/// Runs blocking work (socket reads, child processes) on its own thread, off the small cooperative pool that the
/// engine under test needs.
///
/// The result travels through a `LockedValue` as well as the continuation: ThreadSanitizer does not see the
/// hand-off of a continuation resumed on a Foundation thread (swiftlang/swift#57803), so without the lock it
/// reported the caller's first use of an object `body` made (a `RawTCPClient`) as a race with its initialisation.
/// The lock's release on this thread and acquire on the caller's make that order visible to it.
func onOwnThread<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
    let handOff = LockedValue<Result<Value, any Error>?>(nil)
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        let thread = Thread {
            let result = Result { try body() }
            handOff.withLock { $0 = result }
            continuation.resume()
        }
        thread.start()
    }
    return try handOff.withLock { $0! }.get()
}
