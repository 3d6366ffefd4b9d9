import Foundation

/// Runs ``PartialFiles/removeStale(in:keepingResumableFor:shouldStop:)`` off Swift's cooperative thread pool, at
/// most once at a time per receive directory in this process.
///
/// The sweep is blocking file-system work (up to ``PartialFiles/maxEntriesVisited`` directory entries): run on the
/// cooperative pool, which has one thread per core, a few engines started at once (twenty star spokes in one
/// process, each sweeping the current directory) held every thread of the pool for seconds, and the connections
/// those engines were opening missed the peer's 2-second connection-request deadline. So each sweep gets a thread
/// of its own, and an engine whose receive directory this process is already sweeping skips its own sweep: stale
/// files are those of processes that are gone, and the sweep under way removes them.
package enum StaleFileSweeper {
    /// What a sweep did: how many files it deleted, and the partial files it kept for resuming.
    package typealias SweepResult = (removed: Int, kept: [ResumableFiles.Kept])

    /// The outcome of ``sweep(_:keepingResumableFor:)``.
    package enum Outcome: Sendable {
        /// This process was already sweeping the directory; nothing was done.
        case alreadyUnderWay
        /// The sweep ran (to its end, or until the calling task was cancelled).
        case swept(removed: Int, kept: [ResumableFiles.Kept])
    }

    /// The name of a sweep's thread (at most 15 characters: Linux's limit).
    package static let threadName = "nearby.sweep"

    /// The directories this process is sweeping now (standardized paths).
    private static let underWay = LockedValue<Set<String>>([])

    /// Sweeps `directory` on a thread of its own and returns when the sweep ended. Cancelling the calling task stops
    /// the sweep at its next directory entry (what was found until then is returned).
    package static func sweep(_ directory: URL, keepingResumableFor window: Duration) async -> Outcome {
        await sweep(directory) { shouldStop in
            PartialFiles.removeStale(in: directory, keepingResumableFor: window, shouldStop: shouldStop)
        }
    }

    /// ``sweep(_:keepingResumableFor:)`` with the blocking work given (tests): `work` runs on the sweep's thread and
    /// is handed the stop check.
    package static func sweep(
        _ directory: URL,
        work: @escaping @Sendable (_ shouldStop: @escaping () -> Bool) -> SweepResult
    ) async -> Outcome {
        let key = directory.standardizedFileURL.path
        let claimed = underWay.withLock { $0.insert(key).inserted }
        guard claimed else { return .alreadyUnderWay }
        let stop = LockedValue(false)
        // The result is built on the sweep's thread: it comes back through a handoff continuation, whose lock shows
        // ThreadSanitizer the order a plain continuation's resume hides (see HandoffResumer). It never throws.
        let (removed, kept) = await withTaskCancellationHandler {
            (try? await withHandoffContinuation { (resumer: HandoffResumer<SweepResult>) in
                let thread = Thread {
                    // Named from inside: on Linux a new thread starts with its creator's name.
                    ThreadName.setCurrent(threadName)
                    // Housekeeping: it must not take CPU from the connections the engine is opening meanwhile (on
                    // a slow or loaded machine a busy sweep delayed a connection request past the peer's deadline).
                    ThreadPriority.lowerCurrentToBackground()
                    let result = work { stop.withLock { $0 } }
                    underWay.withLock { _ = $0.remove(key) }
                    resumer.resume(returning: result)
                }
                thread.start()
            }) ?? (removed: 0, kept: [])
        } onCancel: {
            stop.withLock { $0 = true }
        }
        return .swept(removed: removed, kept: kept)
    }
}
