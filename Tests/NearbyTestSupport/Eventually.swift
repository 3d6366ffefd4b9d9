/// Polls `probe` every 20 ms until it returns a value, giving up with ``TestTimeout`` after `seconds` (a bound on
/// the wait, never a timing assertion).
public func eventually<Value>(
    within seconds: Double = 10,
    _ what: @autoclosure () -> String,
    _ probe: () async throws -> Value?
) async throws -> Value {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while true {
        if let value = try await probe() {
            return value
        }
        guard ContinuousClock.now < deadline else {
            throw TestTimeout(description: "timed out after \(seconds) s waiting for \(what())")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}
