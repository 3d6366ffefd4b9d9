/// The bytes of incoming BYTES payloads that all endpoints of one engine may hold in memory at once
/// (``ResourceLimits/maxBufferedBytes``). Each BYTES payload reserves its announced size when its first chunk
/// arrives and gives it back when it is delivered, fails, is cancelled or its connection ends; a payload that does
/// not fit fails at once (the peer gets PAYLOAD_ERROR) and nothing of it is buffered.
package final class BufferedBytesBudget: Sendable {
    /// The most bytes reserved at once.
    package let limit: Int64
    private let reserved = LockedValue<Int64>(0)

    /// A budget of `limit` bytes.
    package init(limit: Int64) {
        self.limit = limit
    }

    /// Bytes reserved now.
    package var reservedBytes: Int64 { reserved.withLock { $0 } }

    /// Reserves `count` bytes; `false` (and nothing reserved) when they do not fit.
    package func reserve(_ count: Int64) -> Bool {
        reserved.withLock { reserved in
            guard count >= 0, reserved + count <= limit else { return false }
            reserved += count
            return true
        }
    }

    /// Gives back `count` bytes reserved earlier.
    package func release(_ count: Int64) {
        reserved.withLock { $0 = max(0, $0 - count) }
    }
}
