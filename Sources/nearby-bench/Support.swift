import Foundation
import Logging
import NearbyConnections
import NearbyCore

/// A logger that prints nothing below `.critical`: benchmarks measure the stack, not its logging.
/// The library's logger for the benchmark: critical only, unless `NEARBY_BENCH_LOG` names a level (`debug`,
/// `info`, …) to see why a run failed (both the parent and the receiver process read it).
func quietLogger() -> Logger {
    var logger = Logger(label: "nearby-bench") { label in StreamLogHandler.standardError(label: label) }
    logger.logLevel = ProcessInfo.processInfo.environment["NEARBY_BENCH_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
    return logger
}

/// The receive directory of every manager this process creates (the spokes, senders and discovery peers): an empty
/// folder of its own. The default, the current directory, is the repository when the benchmark runs from it, and
/// each new engine sweeps its receive directory for stale partial files (up to 200,000 entries, on a thread of its
/// own): that sweep ran during the measured transfers and connections and was counted as the sender's CPU.
let benchReceiveDirectory: URL = {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-bench-\(getpid())")
    try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}()

/// Options for a manager of this process: the quiet logger and ``benchReceiveDirectory``.
func benchOptions() -> ConnectionOptions {
    ConnectionOptions(receiveDirectory: benchReceiveDirectory, logger: quietLogger())
}

/// Monotonic seconds.
func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// What a peer has seen so far, for waits.
struct PeerState: Sendable {
    var connected: Set<String> = []
    var closed: Set<String> = []
    var acks = 0
    var found: [String: Data] = [:]
}

/// Consumes a manager's events: accepts every connection, counts small BYTES payloads as acks, and lets callers
/// wait (with a time limit) until the state satisfies a condition.
actor Tracker {
    let manager: ConnectionManager
    private(set) var state = PeerState()
    private var waiters: [Int: (condition: @Sendable (PeerState) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = [:]
    private var nextWaiter = 0
    private var pump: Task<Void, Never>?

    /// Subscribes at once (before anything starts), then handles events in order.
    init(manager: ConnectionManager) {
        self.manager = manager
        pumpStart = manager.events
    }

    private var pumpStart: AsyncStream<ConnectionEvent>?

    /// Starts handling events; call once right after init.
    func start() {
        guard let subscription = pumpStart else { return }
        pumpStart = nil
        pump = Task { [weak self] in
            for await event in subscription {
                guard let self else { return }
                await self.handle(event)
            }
        }
    }

    func stop() {
        pump?.cancel()
        for (_, waiter) in waiters { waiter.continuation.resume(returning: false) }
        waiters = [:]
    }

    private func handle(_ event: ConnectionEvent) async {
        switch event {
        case .connectionRequested(let id, _, _, _):
            let manager = self.manager
            Task { try? await manager.accept(id) }
        case .stateChanged(let id, let newState, _):
            switch newState {
            case .connected: state.connected.insert(id)
            case .disconnected, .rejected:
                state.connected.remove(id)
                state.closed.insert(id)
            case .connecting: break
            }
        case .bytesReceived(_, _, let data):
            if data.count < 64 { state.acks += 1 }
        case .endpointFound(let id, let context, _):
            state.found[id] = context
        default:
            return
        }
        check()
    }

    private func check() {
        for (key, waiter) in waiters where waiter.condition(state) {
            waiters.removeValue(forKey: key)
            waiter.continuation.resume(returning: true)
        }
    }

    private func expire(_ key: Int) {
        waiters.removeValue(forKey: key)?.continuation.resume(returning: false)
    }

    /// Waits until `condition` holds; `false` after `timeout` seconds.
    func wait(timeout: Double, _ condition: @escaping @Sendable (PeerState) -> Bool) async -> Bool {
        if condition(state) { return true }
        let key = nextWaiter
        nextWaiter += 1
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .seconds(timeout))
            await self?.expire(key)
        }
        let result = await withCheckedContinuation { waiters[key] = (condition, $0) }
        timer.cancel()
        return result
    }
}

/// Reads a field (in kB) of /proc/PID/status.
func procStatusKB(pid: Int32, field: String) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
        let digits = line.dropFirst(field.count + 1).filter(\.isNumber)
        return Int(digits)
    }
    return nil
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
}

/// Runs `operation` but gives up after `seconds` (throwing) even when the operation ignores cancellation; a call
/// that never returns is left behind. Every call into the stack goes through this, so a hang becomes an error.
func bounded<T: Sendable>(
    _ seconds: Double, _ what: String, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let claimed = LockedValue(false)
    let claim: @Sendable () -> Bool = { claimed.withLock { done in defer { done = true }; return !done } }
    return try await withCheckedThrowingContinuation { continuation in
        Task {
            do {
                let value = try await operation()
                if claim() { continuation.resume(returning: value) }
            } catch {
                if claim() { continuation.resume(throwing: error) }
            }
        }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            if claim() { continuation.resume(throwing: BenchFailure("\(what) did not return within \(Int(seconds)) s")) }
        }
    }
}

/// Counts calls that had to be abandoned (reported on stderr and in the figures' notes).
let abandonedCalls = LockedValue<[String: Int]>([:])

/// Disconnects and shuts a manager down, abandoning either call after 5 s.
func closeQuietly(_ manager: ConnectionManager, _ tracker: Tracker, endpoint: EndpointID?) async {
    if let endpoint {
        do { try await bounded(5, "disconnect(from:)") { await manager.disconnect(from: endpoint) } } catch {
            abandonedCalls.withLock { $0["disconnect", default: 0] += 1 }
        }
    }
    do { try await bounded(5, "shutdown()") { await manager.shutdown() } } catch {
        abandonedCalls.withLock { $0["shutdown", default: 0] += 1 }
    }
    await tracker.stop()
}
