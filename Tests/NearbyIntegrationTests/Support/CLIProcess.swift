import Foundation
import NearbyTestSupport
import NearbyCore

/// A running `nearby` command: its stdout is read on a thread of its own, one JSON event per line; stderr goes to a
/// file. Every wait is bounded. ``stop()`` ends it by PID (SIGCONT, SIGTERM, then SIGKILL) and reaps it.
final class CLIProcess: Sendable {
    /// A short name for messages ("advertiser", "sender").
    let label: String
    /// The process ID.
    let pid: Int32
    private let arguments: [String]
    private let process: Process
    private let stderrURL: URL
    private let output = LockedValue(Output())

    private struct Output {
        var events: [JSONEvent] = []
        var otherLines: [String] = []
        var closed = false
    }

    private init(label: String, arguments: [String], process: Process, stderrURL: URL) {
        self.label = label
        self.arguments = arguments
        self.process = process
        self.stderrURL = stderrURL
        pid = process.processIdentifier
    }

    /// Starts `nearby ARGUMENTS` with stdin on /dev/null (never a TTY).
    static func launch(
        label: String, arguments: [String], stderrDirectory: URL, environment: [String: String] = [:]
    ) throws -> CLIProcess {
        let executable = try IntegrationEnvironment.nearbyExecutable()
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        let stderrURL = stderrDirectory.appendingPathComponent("\(label)-\(UUID().uuidString.prefix(6)).stderr")
        _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
        let cli = CLIProcess(label: label, arguments: arguments, process: process, stderrURL: stderrURL)
        let reader = stdout.fileHandleForReading
        Thread { cli.readLines(from: reader) }.start()
        return cli
    }

    private func readLines(from handle: FileHandle) {
        var pending = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                record(line)
            }
        }
        if !pending.isEmpty { record(String(decoding: pending, as: UTF8.self)) }
        output.withLock { $0.closed = true }
    }

    private func record(_ line: String) {
        let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return }
        output.withLock {
            if let event = JSONEvent(line: trimmed) { $0.events.append(event) } else { $0.otherLines.append(trimmed) }
        }
    }

    /// Every event printed so far.
    var events: [JSONEvent] { output.withLock { $0.events } }

    /// The stdout lines that are not JSON events (human-readable output), trimmed, in order.
    var otherLines: [String] { output.withLock { $0.otherLines } }

    /// Events named `name` printed so far.
    func events(_ name: String) -> [JSONEvent] { events.filter { $0.event == name } }

    /// Waits for the first event named `name` that satisfies `predicate`.
    @discardableResult
    func waitForEvent(
        _ name: String, timeout: Double = 30, where predicate: @escaping (JSONEvent) -> Bool = { _ in true }
    ) async throws -> JSONEvent {
        do {
            return try await eventually(within: timeout, "\(label) to print \(name)") {
                if let event = events.first(where: { $0.event == name && predicate($0) }) { return event }
                if !isRunning, output.withLock({ $0.closed }) {
                    throw IntegrationFailure("\(label) exited before printing \(name)")
                }
                return nil
            }
        } catch {
            throw IntegrationFailure("\(error)\n\(diagnostics)")
        }
    }

    /// Whether the process is still running.
    var isRunning: Bool { process.isRunning }

    /// Waits for the process to exit and for its output to be read; returns its exit status (128+N for signal N).
    func waitForExit(timeout: Double = 30) async throws -> Int32 {
        do {
            _ = try await eventually(within: timeout, "\(label) to exit") { !isRunning && output.withLock { $0.closed } ? true : nil }
        } catch {
            throw IntegrationFailure("\(error)\n\(diagnostics)")
        }
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }

    /// Sends `signal` to the process, if it still runs.
    func signal(_ signal: Int32) {
        if process.isRunning { kill(pid, signal) }
    }

    /// Ends the process if it still runs (SIGCONT, SIGTERM, up to 5 s, then SIGKILL) and reaps it.
    func stop() {
        guard process.isRunning else { return }
        kill(pid, SIGCONT)
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        // Bounded: Foundation's Process can miss an exit on Linux, and an unbounded waitUntilExit() would then
        // block this thread (and the test run) for ever.
        let reapDeadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < reapDeadline { usleep(20_000) }
    }

    /// What the process said: its command line, other stdout lines, the last events and the end of stderr.
    var diagnostics: String {
        let (events, other) = output.withLock { ($0.events, $0.otherLines) }
        let stderr = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
        return """
            --- \(label) (pid \(pid)): nearby \(arguments.joined(separator: " "))
            --- last stdout events:
            \(events.suffix(15).map(\.line).joined(separator: "\n"))
            --- other stdout lines:
            \(other.suffix(10).joined(separator: "\n"))
            --- stderr (end):
            \(String(stderr.suffix(3000)))
            """
    }
}
