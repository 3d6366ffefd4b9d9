import Foundation

/// A value guarded by a lock, for the small pieces of mutable state the TCP and Wi-Fi LAN types share between
/// tasks and NIO event-loop threads. Never held across a suspension point.
final class WiFiLANLockedValue<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Wraps `value`.
    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the lock held and exclusive access to the value.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
