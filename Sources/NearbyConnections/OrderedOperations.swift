import NearbyCore

/// Runs a manager's control operations (start and stop of advertising and discovery) one at a time, in the order they
/// were called, so a fire-and-forget `stopAdvertising()` is done before a later `startAdvertising` begins.
final class OrderedOperations: Sendable {
    private let last = LockedValue<Task<Void, Never>?>(nil)

    /// Starts `operation` once every earlier one has finished; returns at once.
    @discardableResult
    func enqueue(_ operation: @escaping @Sendable () async -> Void) -> Task<Void, Never> {
        last.withLock { last in
            let previous = last
            let task = Task {
                await previous?.value
                await operation()
            }
            last = task
            return task
        }
    }

    /// Runs `operation` once every earlier one has finished, and returns its result.
    func run<Result: Sendable>(_ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        let outcome = LockedValue<Swift.Result<Result, any Error>?>(nil)
        await enqueue {
            do {
                let value = try await operation()
                outcome.withLock { $0 = .success(value) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
        }.value
        guard let result = outcome.withLock({ $0 }) else { throw CancellationError() }
        return try result.get()
    }
}
