import Logging

/// Logs a warning when a bounded event stream starts dropping events because its consumer does not keep up:
/// once when the first event is dropped, then again only after the stream had room again.
package final class EventOverflowWarning: Sendable {
    private let logger: Logger
    private let what: String
    private let limit: Int
    private let overflowing = LockedValue(false)

    /// Creates a warning for the stream `what`, bounded at `limit` events.
    package init(logger: Logger, what: String, limit: Int) {
        self.logger = logger
        self.what = what
        self.limit = limit
    }

    /// Looks at the result of one `yield`.
    package func check<Element>(_ result: AsyncStream<Element>.Continuation.YieldResult) {
        let dropped: Bool
        switch result {
        case .dropped: dropped = true
        case .enqueued, .terminated: dropped = false
        @unknown default: dropped = false
        }
        let first = overflowing.withLock { state -> Bool in
            defer { state = dropped }
            return dropped && !state
        }
        if first {
            logger.warning("\(what) are not being consumed; dropping the oldest buffered ones", metadata: [
                "buffered_limit": "\(limit)"])
        }
    }
}
