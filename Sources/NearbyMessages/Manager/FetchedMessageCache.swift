/// The large messages a subscription fetched (or was delivered), by descriptor, so that another publisher of the
/// same message does not need a fetch of its own. Holds at most ``capacity`` messages: storing one more drops the
/// least recently used, so a stranger showing many distinct messages cannot grow it.
struct FetchedMessageCache: Sendable {
    /// The most messages held.
    let capacity: Int
    private var entries: [MessageDescriptor: (message: Message, used: UInt64)] = [:]
    private var clock: UInt64 = 0

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// How many messages are held.
    var count: Int { entries.count }

    /// The message `descriptor` describes, when held (it becomes the most recently used).
    mutating func message(for descriptor: MessageDescriptor) -> Message? {
        guard let entry = entries[descriptor] else { return nil }
        clock += 1
        entries[descriptor] = (entry.message, clock)
        return entry.message
    }

    /// Holds `message` under `descriptor`, dropping the least recently used one when full.
    mutating func store(_ message: Message, for descriptor: MessageDescriptor) {
        guard capacity > 0 else { return }
        clock += 1
        if entries[descriptor] == nil, entries.count >= capacity,
            let oldest = entries.min(by: { $0.value.used < $1.value.used })?.key
        {
            entries[oldest] = nil
        }
        entries[descriptor] = (message, clock)
    }
}
