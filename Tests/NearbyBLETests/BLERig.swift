import Foundation
import Logging
import NearbyBLE
import NearbyTestSupport
import NearbyCore

#if canImport(Glibc)
import Glibc
#endif

/// Where the Bumble test rig lives and whether it can run.
enum BLETestEnvironment {
    static var repoRoot: String {
        if let root = ProcessInfo.processInfo.environment["NEARBY_REPO_ROOT"], !root.isEmpty { return root }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }

    /// The Python interpreter with bumble==0.0.236: `NEARBY_BLE_PYTHON`, else `<repo>/.venv/bin/python`.
    static var python: String {
        if let python = ProcessInfo.processInfo.environment["NEARBY_BLE_PYTHON"], !python.isEmpty { return python }
        return repoRoot + "/.venv/bin/python"
    }

    static var inTestNetwork: Bool { ProcessInfo.processInfo.environment["NEARBY_TEST_NETNS"] == "1" }

    /// The Bumble tests run when the venv exists, and always under scripts/test.sh (where a missing venv is a
    /// failure, not a skip).
    static var bumbleTestsEnabled: Bool {
        inTestNetwork || FileManager.default.isExecutableFile(atPath: python)
    }

    static func script(_ name: String) -> String { repoRoot + "/Tests/BLE/" + name }

    static func logger(_ label: String) -> Logger {
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = ProcessInfo.processInfo.environment["NEARBY_BLE_DEBUG"] == "1" ? .trace : .warning
        return logger
    }
}

struct RigFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A child process started with `posix_spawn`, output to a file, ended only by its PID.
final class RigProcess: Sendable {
    let pid: pid_t
    let outputPath: String
    private let exit = LockedValue<Int32?>(nil)

    init(_ arguments: [String]) throws {
        outputPath = NSTemporaryDirectory() + "nearby-ble-\(UUID().uuidString.prefix(8)).log"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap({ Int32($0) }) where fd > 2 { posix_spawn_file_actions_addclose(&actions, fd) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGHUP, SIGINT, SIGPIPE, SIGTERM, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONUNBUFFERED"] = "1"
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp)
        guard rc == 0 else { throw RigFailure("posix_spawn \(arguments[0]): \(String(cString: strerror(rc)))") }
        self.pid = pid
    }

    static func python(_ script: String, _ arguments: [String]) throws -> RigProcess {
        let python = BLETestEnvironment.python
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw RigFailure("no Python with Bumble at \(python); run scripts/install-deps.sh")
        }
        return try RigProcess([python, BLETestEnvironment.script(script)] + arguments)
    }

    var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

    var isRunning: Bool {
        exit.withLock { status in
            if status != nil { return false }
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid {
                status = raw
                return false
            }
            return true
        }
    }

    /// The lines written so far that are complete (ended by a newline): unbuffered Python writes a `print`'s
    /// pieces one by one, so the last line may still be growing.
    var completeLines: [String] {
        var lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.removeLast()  // empty after a final newline, or the line still being written
        return lines
    }

    /// Waits for a complete line starting with `prefix`; returns its space-separated words after the prefix.
    func waitForLine(_ prefix: String, within seconds: Double = 30) async throws -> [String] {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let line = completeLines.first(where: { $0.hasPrefix(prefix) }) {
                return line.split(separator: " ").dropFirst().map(String.init)
            }
            if !isRunning { throw RigFailure("process exited before printing \(prefix):\n\(output.suffix(3000))") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw RigFailure("no \(prefix) line within \(seconds) s:\n\(output.suffix(3000))")
    }

    /// Sends SIGKILL to this process (by PID) and reaps it.
    func kill() {
        guard isRunning else { return }
        _ = Glibc.kill(pid, SIGKILL)
        exit.withLock { status in
            var raw: Int32 = 0
            if status == nil, waitpid(pid, &raw, 0) == pid { status = raw }
        }
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: outputPath)
    }
}

/// A set of linked Bumble virtual controllers, one H4 TCP port each.
struct VirtualControllers: Sendable {
    let process: RigProcess
    let ports: [Int]

    static func start(_ count: Int) async throws -> VirtualControllers {
        let process = try RigProcess.python("controllers.py", [String(count)])
        let words = try await process.waitForLine("READY")
        let ports = words.compactMap(Int.init)
        guard ports.count == count else { throw RigFailure("controllers printed \(words)") }
        return VirtualControllers(process: process, ports: ports)
    }

    func spec(_ index: Int) -> HCITransportSpec { .tcp(host: "127.0.0.1", port: ports[index]) }
    func hci(_ index: Int) -> String { "tcp:127.0.0.1:\(ports[index])" }

    func stop() { process.kill() }
}

/// Deterministic pseudo-random bytes.
func patternBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &+ 0x9E37_79B9_7F4A_7C15
    return (0..<count).map { _ in
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return UInt8(truncatingIfNeeded: state >> 33)
    }
}
