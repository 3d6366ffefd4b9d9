import Foundation
import NearbyWiFiLAN
import NearbyWire

/// Thrown when a test waited too long; tests bound every wait so that nothing hangs.
struct TestTimeout: Error, CustomStringConvertible {
    var description: String
}

/// Whether this process runs inside the private network namespace made by `scripts/with-test-network.sh`, with
/// its own dbus-daemon and avahi-daemon.
let isInTestNetwork = ProcessInfo.processInfo.environment["NEARBY_TEST_NETNS"] != nil

/// Polls `probe` every 50 ms until it returns a value, giving up after `seconds`.
func eventually<Value>(
    within seconds: Double = 10,
    _ what: String,
    _ probe: () async throws -> Value?
) async throws -> Value {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while true {
        if let value = try await probe() {
            return value
        }
        guard ContinuousClock.now < deadline else {
            throw TestTimeout(description: "timed out after \(seconds) s waiting for \(what)")
        }
        try await Task.sleep(for: .milliseconds(50))
    }
}

/// Runs `operation`, cancelling it and throwing `TestTimeout` if it takes longer than `seconds`.
func withTimeout<Value: Sendable>(
    _ seconds: Double = 10,
    _ what: String,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
            throw TestTimeout(description: "timed out after \(seconds) s waiting for \(what)")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}

/// A service type that no other test uses, in the Nearby form `_<12 hex>._tcp`.
func uniqueServiceType() -> String {
    "_" + (0..<12).map { _ in String("0123456789ABCDEF".randomElement()!) }.joined() + "._tcp"
}

/// An instance name that no other test uses.
func uniqueInstanceName(_ prefix: String) -> String {
    prefix + (0..<10).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement()!) }.joined()
}

/// Collects the events of a browse stream in the background so that tests can poll them.
actor BrowseRecorder {
    private(set) var events: [DNSSDBrowseEvent] = []
    private(set) var endError: (any Error)?
    private(set) var ended = false
    private var consumer: Task<Void, Never>?

    /// Starts consuming `stream`.
    static func start(_ stream: AsyncThrowingStream<DNSSDBrowseEvent, any Error>) async -> BrowseRecorder {
        let recorder = BrowseRecorder()
        await recorder.consume(stream)
        return recorder
    }

    private func consume(_ stream: AsyncThrowingStream<DNSSDBrowseEvent, any Error>) {
        consumer = Task {
            do {
                for try await event in stream {
                    self.append(event)
                }
                self.end(nil)
            } catch {
                self.end(error)
            }
        }
    }

    private func append(_ event: DNSSDBrowseEvent) { events.append(event) }

    private func end(_ error: (any Error)?) {
        endError = error
        ended = true
    }

    /// The latest `.found` for `name`, if any.
    func found(_ name: String) -> DNSSDResolvedService? {
        for event in events.reversed() {
            if case .found(let service) = event, service.instanceName == name {
                return service
            }
        }
        return nil
    }

    /// Whether `.lost(name)` came after a `.found` for `name`.
    func lostAfterFound(_ name: String) -> Bool {
        var sawFound = false
        for event in events {
            switch event {
            case .found(let service) where service.instanceName == name: sawFound = true
            case .lost(let lost) where lost == name && sawFound: return true
            default: continue
            }
        }
        return false
    }

    /// Stops browsing (cancels the consuming task, which ends the stream).
    func stop() {
        consumer?.cancel()
    }
}

/// What a finished child process printed.
struct ChildProcessResult {
    var status: Int32
    var output: String
}

/// Runs an executable to completion with stdout and stderr captured, killing it (by its PID) after `seconds`.
func runChildProcess(
    _ path: String,
    _ arguments: [String],
    environment: [String: String]? = nil,
    timeout seconds: Double = 10
) async throws -> ChildProcessResult {
    let outputPath = FileManager.default.temporaryDirectory
        .appendingPathComponent("nearby-dnssd-test-\(UUID().uuidString).out").path
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    let process = try SpawnedProcess(path, arguments, environment: environment, outputPath: outputPath)
    let status: Int32
    do {
        status = try await process.waitForExit(within: seconds, "\(path) \(arguments.joined(separator: " ")) to exit")
    } catch {
        await process.kill()
        throw error
    }
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    return ChildProcessResult(status: status, output: output)
}
