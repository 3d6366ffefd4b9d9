import Foundation
import NearbyCore
import NearbyTestSupport

/// `Tests/Relay/tcp_relay.py` running between a sender and the advertiser it sends to: it resets the connection
/// after given byte counts, refuses new connections after the last cut, or throttles. Its stdout lines are
/// collected; ``stop()`` ends it (its standard input closes; SIGKILL by PID if it lingers) and returns the bytes it
/// forwarded towards the advertiser.
final class RelayProcess: Sendable {
    let pid: Int32
    let port: Int
    private let process: Process
    private let stdin: Pipe
    private let lines: LockedValue<[String]>

    /// Starts a relay to 127.0.0.1:`target` and waits for its port.
    static func launch(
        to target: Int, cutAt cuts: [Int] = [], refuseAfterCuts: Bool = false, rate: Int? = nil
    ) async throws -> RelayProcess {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Relay/tcp_relay.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["python3", script.path, "--target", "\(target)"]
        for cut in cuts { arguments += ["--cut-at", "\(cut)"] }
        if refuseAfterCuts { arguments.append("--refuse-after-cuts") }
        if let rate { arguments += ["--rate", "\(rate)"] }
        process.arguments = arguments
        let stdout = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        try process.run()
        let lines = LockedValue<[String]>([])
        let reader = stdout.fileHandleForReading
        Thread {
            var pending = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    lines.withLock { $0.append(line) }
                }
            }
        }.start()
        let ready = try await eventually(within: 20, "the relay to listen") {
            lines.withLock { $0.first { $0.hasPrefix("READY ") } }
        }
        guard let port = Int(ready.dropFirst("READY ".count)) else { throw IntegrationFailure("relay said \(ready)") }
        return RelayProcess(process: process, stdin: stdin, lines: lines, port: port)
    }

    private init(process: Process, stdin: Pipe, lines: LockedValue<[String]>, port: Int) {
        self.process = process
        self.stdin = stdin
        self.lines = lines
        self.port = port
        pid = process.processIdentifier
    }

    deinit {
        // A test that failed before ``stop()``: the relay goes with it (by PID).
        if process.isRunning { kill(pid, SIGKILL) }
    }

    /// Every line the relay printed so far.
    var output: [String] { lines.withLock { $0 } }

    /// How many cuts it made so far.
    var cuts: Int { output.filter { $0.hasPrefix("CUT ") }.count }

    /// How many connections it bridged so far.
    var connections: Int { output.filter { $0 == "CONNECTION" }.count }

    /// Ends the relay (closing its standard input) and returns the bytes it forwarded towards the target.
    func stop() async throws -> Int64 {
        try? stdin.fileHandleForWriting.close()
        let line = try await eventually(within: 10, "the relay's count") {
            lines.withLock { $0.first { $0.hasPrefix("FORWARDED ") } }
        }
        let reapDeadline = Date().addingTimeInterval(5)
        while process.isRunning && Date() < reapDeadline { usleep(20_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        return Int64(line.dropFirst("FORWARDED ".count)) ?? -1
    }
}
