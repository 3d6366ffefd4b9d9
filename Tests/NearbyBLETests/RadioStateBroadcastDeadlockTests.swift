import Dispatch
import Foundation
import NearbyBLE
import NearbyWire
import Testing

/// Issue 21's deadlock: `RadioStateBroadcast.publish` yielded to its listeners with its lock held, while cancelling
/// a listener's task runs the stream's `onTermination` (which takes that lock) with the task's status lock held.
/// Publishers and cancellers on plain threads, many at once: before the fix this hung within seconds (the
/// threads stuck for good); now every round ends. Publishers and cancellers are plain threads and the listeners'
/// tasks run on an executor of their own (dispatch threads), so a deadlock cannot take the cooperative pool down
/// with it, and the test's own wait is bounded: a hang fails the test instead of hanging the run.
@Suite(.timeLimit(.minutes(10))) struct RadioStateBroadcastDeadlockTests {
    private static let problem = NearbyError(.mediumUnavailable, "flapping")

    @Test func publishingWhileListenersAreCancelledNeverDeadlocks() async throws {
        let broadcast = RadioStateBroadcast()
        let stop = StopFlag()
        let group = DispatchGroup()
        let rounds = 200
        let listenerThreads = 4

        for _ in 0..<2 {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                while !stop.isSet {
                    broadcast.publish(.powered)
                    broadcast.publish(.unavailable(Self.problem))
                }
            }
        }
        let listenersDone = DispatchGroup()
        let listenerExecutor = DispatchTaskExecutor()
        let roundsDone = Counter()
        for _ in 0..<listenerThreads {
            group.enter()
            listenersDone.enter()
            Thread.detachNewThread {
                defer {
                    listenersDone.leave()
                    group.leave()
                }
                for _ in 0..<rounds {
                    let first = DispatchSemaphore(value: 0)
                    let stream = broadcast.stream()
                    let task = Task(executorPreference: listenerExecutor) {
                        var signalled = false
                        for await _ in stream where !signalled {
                            signalled = true
                            first.signal()
                        }
                    }
                    _ = first.wait(timeout: .now() + .milliseconds(200))
                    roundsDone.increment()
                    task.cancel()
                }
            }
        }
        // Listeners do their rounds while the publishers run; the publishers are told to stop once the rounds are
        // done, or once no round ended for 30 s. The second happens without any deadlock: a listener's `stream()`
        // posts the current state to the broadcast's outbox and, when nobody is draining it, drains it until it is
        // empty (LockedOutbox), including what the two publishers post meanwhile; publishing in a tight loop, they
        // can keep it non-empty, and under ThreadSanitizer that held a listener thread until the publishers stopped
        // (two CI runs: the rounds stalled, then all 800 ended). A deadlock does not end when the publishing stops:
        // its threads are stuck inside `publish` and `cancel()` for good. So the test fails when the threads have
        // not all ended 60 s after the publishers were told to stop.
        let finished = await Self.wait(listenersDone, whileProgressing: { roundsDone.value }, stalledAfter: 30)
        let doneWhilePublishing = roundsDone.value
        stop.set()
        let stopped = await Self.wait(group, seconds: 60)
        #expect(
            stopped,
            """
            publishers and cancelled listeners deadlocked: threads still stuck 60 s after the publishers were told \
            to stop; \(roundsDone.value) of \(rounds * listenerThreads) rounds ended
            """)
        if !finished {
            print(
                "radio-state deadlock test: rounds stalled while publishing (\(doneWhilePublishing) of "
                    + "\(rounds * listenerThreads)); all threads ended once the publishers stopped: \(stopped)")
        }
        // After a deadlock the broadcast's lock is held for good: touching it again would hang this task too.
        if stopped { broadcast.finish() }
    }

    @Test func aLateListenerStartsWithTheCurrentStateAndSeesChangesInOrder() async throws {
        let broadcast = RadioStateBroadcast()
        broadcast.publish(.unavailable(Self.problem))
        var iterator = broadcast.stream().makeAsyncIterator()
        broadcast.publish(.powered)
        broadcast.publish(.powered)  // equal: dropped
        broadcast.publish(.unavailable(Self.problem))
        broadcast.finish()
        var seen: [String] = []
        while let state = await iterator.next() {
            if case .powered = state { seen.append("powered") } else { seen.append("unavailable") }
        }
        #expect(seen == ["unavailable", "powered", "unavailable"])
        #expect(broadcast.poweredCount == 1)
    }

    /// Waits for `group` as long as `progress` keeps changing; `false` once it stood still for `stalledAfter`
    /// seconds (checked every 5 s).
    private static func wait(
        _ group: DispatchGroup, whileProgressing progress: @Sendable () -> Int, stalledAfter: Double
    ) async -> Bool {
        var last = progress()
        var lastChange = ContinuousClock.now
        while true {
            if await wait(group, seconds: 5) { return true }
            let now = progress()
            if now != last {
                (last, lastChange) = (now, .now)
            } else if ContinuousClock.now - lastChange >= .seconds(stalledAfter) {
                return false
            }
        }
    }

    /// Waits for `group` on a dispatch thread (never blocking the cooperative pool); `false` after `seconds`.
    private static func wait(_ group: DispatchGroup, seconds: Int) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: group.wait(timeout: .now() + .seconds(seconds)) == .success)
            }
        }
    }
}

/// Runs tasks on dispatch threads, away from the cooperative pool.
private final class DispatchTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let queue = DispatchQueue(label: "deadlock-test.listeners", attributes: .concurrent)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}

/// A count shared by threads.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0

    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}

/// A flag set once, read from many threads.
private final class StopFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
