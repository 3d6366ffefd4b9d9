/// Text waiting to be written, in the order it was composed, and whether someone is writing it.
///
/// Kept under the owner's lock: a caller appends while holding it and, when ``append(_:_:)`` says so, becomes the
/// writer and writes what ``next()`` returns after releasing the lock, until ``next()`` returns nothing. Writes
/// never happen under the lock, and text from different callers never mixes or changes order.
struct OrderedText: Sendable {
    /// Text for one file descriptor.
    struct Item: Sendable {
        var descriptor: Int32
        var text: String
    }

    private var pending: [Item] = []
    private var writing = false

    /// Queues `text` for `descriptor`; `true` when the caller must write the queue (nobody else is writing it).
    mutating func append(_ descriptor: Int32, _ text: String) -> Bool {
        if !text.isEmpty { pending.append(Item(descriptor: descriptor, text: text)) }
        guard !writing, !pending.isEmpty else { return false }
        writing = true
        return true
    }

    /// What the writer writes next; empty when the queue is drained, and the caller is no longer the writer.
    mutating func next() -> [Item] {
        let batch = pending
        pending.removeAll()
        if batch.isEmpty { writing = false }
        return batch
    }
}
