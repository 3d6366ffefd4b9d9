/// Bytes that arrive in arbitrary pieces, read from the front: the buffer behind every stream deframer (the
/// length-prefixed frame reader here, the H4 deframer of the BLE host).
///
/// Consumed bytes are dropped lazily: storage is compacted once more than 64 KiB have been consumed and they are
/// more than half of it, or reset when everything was consumed, so a long stream costs amortised O(1) per byte.
package struct ByteAccumulator: Sendable {
    private var buffer: [UInt8] = []
    private var start = 0

    /// Creates an empty buffer.
    package init() {}

    /// The number of bytes not yet consumed.
    package var count: Int { buffer.count - start }

    /// Whether every byte appended has been consumed.
    package var isEmpty: Bool { buffer.count == start }

    /// Adds bytes at the back.
    package mutating func append(_ bytes: some Sequence<UInt8>) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The unconsumed byte at `offset` from the front; `offset` must be below ``count``.
    package subscript(offset: Int) -> UInt8 { buffer[start + offset] }

    /// `length` unconsumed bytes from `offset` on, without consuming them; the range must lie within ``count``.
    package func bytes(at offset: Int, length: Int) -> ArraySlice<UInt8> {
        buffer[(start + offset)..<(start + offset + length)]
    }

    /// Drops `length` bytes from the front; `length` must not exceed ``count``.
    package mutating func consume(_ length: Int) {
        start += length
        if start > 64 * 1024 && start * 2 > buffer.count {
            buffer.removeFirst(start)
            start = 0
        }
    }
}
