import Foundation
import Logging

extension NearbyEngine {
    /// Starts removing the partial files a crashed run left in `directory` (``PartialFiles/removeStale(in:shouldStop:)``)
    /// in the background, on a thread of its own (``StaleFileSweeper``; skipped when another engine of this process
    /// is sweeping the same directory). The receive directory may be a large tree (the current directory of a CLI
    /// started in a home or build folder): the sweep once held up advertising for minutes, silently, on a slow file
    /// system. It only deletes files of processes that are gone, so it runs next to transfers of this one.
    ///
    /// Partial files with a fresh resume record are kept for their senders (auto-resume across a restart): they go
    /// to `resumable`, and once `window` passed, those nobody claimed are deleted.
    ///
    /// Owner: the engine's scope; ``shutdown()`` cancels the returned child (the sweep stops at its next directory
    /// entry; kept files stay for the next start) and waits for `ended`, which is signalled when the child returns.
    static func startStaleFileCleanup(
        in directory: URL, keepingFor window: Duration, into resumable: ResumableFiles, clock: NearbyClock,
        logger: Logger, scope: TaskScope, ended: CompletionSignal
    ) -> ChildTask? {
        let child = scope.spawnCancellable {
            defer { ended.signal() }
            logger.debug("removing stale partial files in the background", metadata: ["directory": "\(directory.path)"])
            let started = ContinuousClock.now
            // On a thread of its own (StaleFileSweeper): blocking work on the cooperative pool starves connections.
            guard case .swept(let removed, let kept) = await StaleFileSweeper.sweep(directory, keepingResumableFor: window)
            else {
                logger.debug("stale partial files: this process is already sweeping the directory")
                return
            }
            let metadata: Logger.Metadata = [
                "count": "\(removed)", "duration": "\(ContinuousClock.now - started)",
                "cancelled": "\(Task.isCancelled)",
            ]
            if removed > 0 {
                logger.info("removed stale partial files of a crashed run", metadata: metadata)
            } else {
                logger.debug("no stale partial files", metadata: metadata)
            }
            guard !kept.isEmpty else { return }
            resumable.add(kept)
            logger.info("keeping partial files of a crashed run for their senders", metadata: [
                "count": "\(kept.count)", "window": "\(window)"])
            // The window passes (or the engine shuts down: the files stay for the next start).
            guard (try? await clock.sleep(for: window)) != nil, !Task.isCancelled else { return }
            resumable.expire()
        }
        if child == nil { ended.signal() }
        return child
    }

    /// Waits until the start-up removal of stale partial files has finished (tests; ``shutdown()`` cancels it).
    package func waitForStaleFileCleanup() async {
        await staleFileCleanupEnded.wait()
    }
}
