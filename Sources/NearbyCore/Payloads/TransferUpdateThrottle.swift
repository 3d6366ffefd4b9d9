/// Thins out the in-progress updates of FILE payloads to at most one per ``minimumInterval`` per payload, as
/// Google's payload manager does (`kMinTransferUpdateInterval`, 50 ms, FILE only): a fast transfer reports its
/// progress a few times a second instead of once per 64 KiB chunk, which spares the app and the engine a wake-up
/// per chunk.
///
/// Never held back: the first update of a payload, every terminal update (success, failure, canceled) and every
/// update of BYTES and STREAM payloads. Nothing is delayed either: an update is delivered at once or dropped, and
/// the terminal update carries the final byte count. A value type; its owner asks it about each update with the
/// current time of the engine's clock.
package struct TransferUpdateThrottle: Sendable {
    /// The least time between two delivered in-progress updates of one FILE payload.
    package static let minimumInterval: Duration = .milliseconds(50)

    /// When each FILE payload under way last had an in-progress update delivered.
    private var lastDelivered: [PayloadID: Duration] = [:]

    /// Makes a throttle that has seen nothing.
    package init() {}

    /// Whether `update`, made at `now`, is to be delivered; records it if so. A terminal update forgets its payload.
    package mutating func admit(_ update: PayloadTransferUpdate, now: Duration) -> Bool {
        guard update.kind == .file else { return true }
        guard update.status == .inProgress else {
            lastDelivered.removeValue(forKey: update.payloadID)
            return true
        }
        if let last = lastDelivered[update.payloadID], now - last < Self.minimumInterval { return false }
        lastDelivered[update.payloadID] = now
        return true
    }

    /// The number of payloads it remembers (tests check that terminal updates clean up).
    package var trackedPayloadCount: Int { lastDelivered.count }
}
