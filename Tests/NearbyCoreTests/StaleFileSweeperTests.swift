import Foundation
import NearbyCore
import NearbyTestSupport
import Testing

/// The start-up sweep of stale partial files runs on a thread of its own, once at a time per directory, and stops
/// when its task is cancelled (a sweep on the cooperative pool once starved twenty engines' connections).
@Suite("Stale-file sweeps off the cooperative pool", .timeLimit(.minutes(1)))
struct StaleFileSweeperTests {
    /// A gate the blocking work waits at, and a record of where it ran.
    final class Gate: @unchecked Sendable {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let threadName = LockedValue<String?>(nil)
        let niceness = LockedValue<Int32?>(nil)
    }

    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("nearby-sweeper-\(UUID().uuidString)")
    }

    @Test("The sweep runs on its own low-priority thread; a second sweep of the directory meanwhile is skipped, another directory's is not")
    func ownThreadAndOnePerDirectory() async throws {
        let directory = Self.directory()
        let gate = Gate()
        let first = Task {
            await StaleFileSweeper.sweep(directory) { _ in
                gate.threadName.withLock { $0 = ThreadName.current }
                gate.niceness.withLock { $0 = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }
                gate.entered.signal()
                gate.release.wait()
                return (removed: 3, kept: [])
            }
        }
        // Waits on a thread that is not the pool's: the work above has entered (so the directory is claimed).
        try await onOwnThread { gate.entered.wait() }
        let second = await StaleFileSweeper.sweep(directory) { _ in (removed: 99, kept: []) }
        guard case .alreadyUnderWay = second else {
            Issue.record("a second sweep of a directory under way ran: \(second)")
            return
        }
        let other = await StaleFileSweeper.sweep(Self.directory()) { _ in (removed: 1, kept: []) }
        guard case .swept(removed: 1, kept: _) = other else {
            Issue.record("another directory's sweep did not run: \(other)")
            return
        }
        gate.release.signal()
        guard case .swept(removed: 3, kept: _) = await first.value else {
            Issue.record("the first sweep did not report its result")
            return
        }
        #expect(gate.threadName.withLock { $0 } == StaleFileSweeper.threadName)
        // At the lowest CPU priority (on Linux the nice value of that thread only).
        #expect(gate.niceness.withLock { $0 } == 19)
        // Ended, so the directory may be swept again.
        guard case .swept(removed: 5, kept: _) = await StaleFileSweeper.sweep(directory, work: { _ in (removed: 5, kept: []) })
        else {
            Issue.record("the directory could not be swept again after the first sweep ended")
            return
        }
    }

    @Test("Cancelling the caller stops the blocking work at its next check, and the call returns")
    func cancellationStopsTheWork() async throws {
        let gate = Gate()
        let sweep = Task {
            await StaleFileSweeper.sweep(Self.directory()) { shouldStop in
                gate.entered.signal()
                var visited = 0
                while !shouldStop() {
                    visited += 1
                    usleep(1000)
                }
                return (removed: visited, kept: [])
            }
        }
        try await onOwnThread { gate.entered.wait() }
        sweep.cancel()
        guard case .swept = await sweep.value else {
            Issue.record("a cancelled sweep did not return its (partial) result")
            return
        }
    }

    @Test("A real sweep removes a dead process's partial file")
    func realSweep() async throws {
        let directory = Self.directory()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stale = directory.appendingPathComponent(".nearby-\(ResumableFilesTests.deadPID())-1.partial")
        try Data("half".utf8).write(to: stale)
        guard case .swept(removed: 1, kept: let kept) = await StaleFileSweeper.sweep(directory, keepingResumableFor: .zero) else {
            Issue.record("the sweep did not remove the stale file")
            return
        }
        #expect(kept.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: stale.path))
    }
}
