import Foundation

/// The tail of a STREAM payload already handed to the writer, kept so that the payload can go on from the
/// receiver's offset after a reconnect (auto-resume): a stream cannot be read again.
///
/// At most ``capacity`` bytes are kept (the oldest go first); a resume from further back than that fails the
/// payload. Bytes in flight at a cut are those in the socket buffers and the path between, a few MiB at most.
package struct StreamReplay: Sendable {
    /// How many bytes of a stream are kept for resuming.
    package static let capacity = 16 << 20

    /// The chunks kept, oldest first, with the stream offset each starts at.
    private var chunks: [(offset: Int64, data: Data)] = []
    private var keptBytes = 0

    /// An empty replay.
    package init() {}

    /// Records `data`, handed out at `offset`.
    package mutating func record(_ data: Data, at offset: Int64) {
        guard !data.isEmpty else { return }
        chunks.append((offset, data))
        keptBytes += data.count
        while keptBytes > Self.capacity, let first = chunks.first {
            keptBytes -= first.data.count
            chunks.removeFirst()
        }
    }

    /// The bytes from `offset` up to the end of what was handed out, or `nil` when `offset` is older than what is
    /// kept (or beyond it).
    package func bytes(from offset: Int64) -> Data? {
        let end = chunks.last.map { $0.offset + Int64($0.data.count) } ?? 0
        if offset == end { return Data() }
        guard let first = chunks.first, offset >= first.offset, offset < end else { return nil }
        var result = Data()
        for chunk in chunks where chunk.offset + Int64(chunk.data.count) > offset {
            let skip = max(0, Int(offset - chunk.offset))
            result.append(chunk.data.dropFirst(skip))
        }
        return result
    }
}
