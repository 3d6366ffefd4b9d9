#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Hands a received file to the disk while it arrives and lets the kernel drop what is already on disk from the
/// page cache, one window (8 MiB) at a time.
///
/// Each time a window is complete, `posix_fadvise(POSIX_FADV_DONTNEED)` on it starts its writeback (without waiting)
/// and on the window before it drops those pages, whose writeback was started one window earlier and is normally
/// done by then (pages still dirty or under writeback are simply kept, nothing waits). So a large file never
/// piles up as dirty memory, the `fsync` at its end has at most two windows left to flush, and the page cache
/// reuses the same few pages instead of taking fresh ones for every chunk: on the benchmark's VM that made writing
/// 1 GiB cost 0.53–0.58 s of CPU instead of 0.8–1.7 s (Benchmarks/README.md). The advice is only advice: a failed
/// call changes nothing, and errors of the writes themselves still surface at `write` and at `fsync`.
///
/// The cost: a file just received is read back from disk rather than from memory.
struct WriteBehind: Sendable {
    /// The bytes handed to writeback at a time.
    static let window: Int64 = 8 << 20

    /// Where the next window starts (everything before it has been handed to writeback).
    private(set) var nextWindow: Int64 = 0

    /// The file behind `descriptor` is now `written` bytes long.
    mutating func wrote(upTo written: Int64, descriptor: Int32) {
        while written - nextWindow >= Self.window {
            _ = posix_fadvise(descriptor, off_t(nextWindow), off_t(Self.window), POSIX_FADV_DONTNEED)
            if nextWindow >= Self.window {
                _ = posix_fadvise(descriptor, off_t(nextWindow - Self.window), off_t(Self.window), POSIX_FADV_DONTNEED)
            }
            nextWindow += Self.window
        }
    }
}
