import NearbyCore

/// The bytes waiting to be written to one client of ``MessageServiceServer``, against its limit: lines are admitted
/// while what waits stays within the limit (a line is always admitted when nothing waits, however long it is); the
/// first line beyond it closes the output for good, and the caller disconnects the client.
final class ClientOutput: Sendable {
    /// What became of a line offered for writing.
    enum Admission: Equatable {
        /// Queued; ``ClientOutput/written(_:)`` must be called once it is written.
        case queued
        /// Over the limit: the client is to be disconnected (`waiting` bytes were still unwritten). Reported once.
        case overflowed(waiting: Int)
        /// The output already overflowed; the line is dropped.
        case closed
    }

    /// The most bytes that may wait.
    let limit: Int
    private let state = LockedValue((waiting: 0, closed: false))

    init(limit: Int) {
        self.limit = limit
    }

    /// Offers a line of `count` bytes.
    func add(_ count: Int) -> Admission {
        state.withLock { state in
            if state.closed { return .closed }
            if state.waiting > 0, state.waiting + count > limit {
                state.closed = true
                return .overflowed(waiting: state.waiting)
            }
            state.waiting += count
            return .queued
        }
    }

    /// A queued line of `count` bytes was written.
    func written(_ count: Int) {
        state.withLock { $0.waiting -= count }
    }
}
