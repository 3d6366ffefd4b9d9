import NearbyTestSupport
import Foundation
import NearbyConnections
import NearbyCore

/// Everything one test creates that must go away afterwards: a temporary directory, child processes, managers
/// (and the advertisers and discoverers that must stay alive as long as the test runs).
final class Scratch: Sendable {
    /// The test's temporary directory.
    let root: URL
    private let processes = LockedValue<[CLIProcess]>([])
    private let wiredProcesses = LockedValue<[WiredCLI]>([])
    private let managers = LockedValue<[ConnectionManager]>([])
    private let kept = LockedValue<[any Sendable]>([])

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/nearby-it.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw IntegrationFailure("mkdtemp failed: errno \(errno)") }
        root = URL(fileURLWithPath: String(cString: made), isDirectory: true)
    }

    /// A new (empty) directory under the test's root.
    func directory(_ name: String) throws -> URL {
        let url = root.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A file of `size` random bytes.
    func randomFile(_ name: String, size: Int) throws -> URL {
        let url = root.appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var generator = SystemRandomNumberGenerator()
        var remaining = size
        var words = [UInt64](repeating: 0, count: 1 << 17)  // 1 MiB
        while remaining > 0 {
            for index in words.indices { words[index] = generator.next() }
            let count = min(remaining, words.count * 8)
            try words.withUnsafeBytes { try handle.write(contentsOf: Data($0.prefix(count))) }
            remaining -= count
        }
        return url
    }

    /// A file of `size` bytes from /dev/urandom, written by `head` (fast in a debug build, where ``randomFile(_:size:)``
    /// takes seconds per hundred megabytes).
    func urandomFile(_ name: String, size: Int) async throws -> URL {
        let url = root.appendingPathComponent(name)
        try await onOwnThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/head")
            process.arguments = ["-c", "\(size)", "/dev/urandom"]
            _ = FileManager.default.createFile(atPath: url.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: url)
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw IntegrationFailure("head -c \(size) /dev/urandom failed") }
        }
        return url
    }

    /// A sparse file of `size` zero bytes: big transfers without the disk space or the time to write them.
    func sparseFile(_ name: String, size: Int) throws -> URL {
        let url = root.appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        guard truncate(url.path, off_t(size)) == 0 else { throw IntegrationFailure("truncate \(url.path): errno \(errno)") }
        return url
    }

    /// Launches `nearby ARGS` and stops it at teardown.
    func launchCLI(_ label: String, _ arguments: [String], environment: [String: String] = [:]) throws -> CLIProcess {
        let process = try CLIProcess.launch(
            label: label, arguments: arguments, stderrDirectory: root, environment: environment)
        processes.withLock { $0.append(process) }
        return process
    }

    /// Launches `nearby ARGS` with the standard streams given (stderr to a file under the root) and stops it at
    /// teardown.
    func wired(
        _ arguments: [String], stdin: String = "/dev/null", stdout: WiredCLI.Output,
        environment: [String: String] = [:]
    ) throws -> WiredCLI {
        let stderr = root.appendingPathComponent("wired-\(UUID().uuidString.prefix(6)).stderr").path
        let process = try WiredCLI(arguments, stdin: stdin, stdout: stdout, stderr: stderr, environment: environment)
        wiredProcesses.withLock { $0.append(process) }
        return process
    }

    /// Keeps `manager` alive until teardown, then shuts it down.
    func track(_ manager: ConnectionManager) {
        managers.withLock { $0.append(manager) }
    }

    /// Keeps `object` (an advertiser, a discoverer) alive until teardown.
    func keep(_ object: any Sendable) {
        kept.withLock { $0.append(object) }
    }

    /// Stops every child process (by PID: SIGTERM, then SIGKILL, then reaped), shuts the managers down and removes
    /// the directory.
    func tearDown() async {
        for process in processes.withLock({ $0 }) { process.stop() }
        for process in wiredProcesses.withLock({ $0 }) { process.stop() }
        for manager in managers.withLock({ $0 }) { await manager.shutdown() }
        kept.withLock { $0.removeAll() }
        managers.withLock { $0.removeAll() }
        try? FileManager.default.removeItem(at: root)
    }
}

/// Runs `body` with a fresh ``Scratch``, bounded by `seconds`, and tears the scratch down whatever happens.
func withScratch(
    timeout seconds: Double = 60, _ what: String, _ body: @escaping @Sendable (Scratch) async throws -> Void
) async throws {
    let scratch = try Scratch()
    do {
        try await withTestTimeout(seconds, what) { try await body(scratch) }
    } catch {
        await scratch.tearDown()
        throw error
    }
    await scratch.tearDown()
}

/// The lower-case hex SHA-256 of a file, by `/usr/bin/sha256sum` (fast even in debug builds).
func sha256Hex(of url: URL) async throws -> String {
    try await onOwnThread {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [url.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let digest = String(decoding: data, as: UTF8.self).split(separator: " ").first
        else { throw IntegrationFailure("sha256sum \(url.path) failed") }
        return String(digest)
    }
}

/// The names in `directory`, hidden ones included.
func directoryEntries(_ directory: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
}
