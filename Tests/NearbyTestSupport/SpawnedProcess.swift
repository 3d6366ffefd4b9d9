import Foundation
import NearbyCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A child process that could not be started.
public struct SpawnError: Error, CustomStringConvertible {
    /// What failed.
    public var description: String
}

/// A child process for tests, started with `posix_spawn` and reaped with `waitpid`.
///
/// Foundation's `Process` is not used here: on Linux it learns that a child exited when a socket inherited by the
/// child closes, so a long-running process spawned meanwhile (which inherits that socket too) hides the exit, and
/// children inherit the test runner's blocked signals (SIGTERM included). Here the child gets an empty signal mask,
/// default signal actions, stdin from /dev/null, stdout and stderr to one file, and no other descriptors.
public final class SpawnedProcess: Sendable {
    /// The child's process ID.
    public let pid: pid_t
    private let status = LockedValue<Int32?>(nil)

    /// Starts `path` with `arguments`; `environment` defaults to this process's; output goes to `outputPath`
    /// (appended) or is discarded.
    public init(_ path: String, _ arguments: [String], environment: [String: String]? = nil, outputPath: String? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath ?? "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Close every other descriptor open now (a descriptor closed before the spawn is skipped by glibc).
        let openDescriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in openDescriptors.compactMap({ Int32($0) }) where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaultSignals = sigset_t()
        sigemptyset(&defaultSignals)
        for signal in [SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2] {
            sigaddset(&defaultSignals, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let environment = environment ?? ProcessInfo.processInfo.environment
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else {
            throw SpawnError(description: "posix_spawn \(path) failed: \(String(cString: strerror(result)))")
        }
        self.pid = pid
    }

    /// The exit code (128 + signal number if it was killed), or `nil` while it runs.
    public var exitStatus: Int32? {
        status.withLock { status in
            if status == nil {
                var raw: Int32 = 0
                if waitpid(pid, &raw, WNOHANG) == pid {
                    let signal = raw & 0x7F
                    status = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
                }
            }
            return status
        }
    }

    /// Whether the child has not exited yet.
    public var isRunning: Bool { exitStatus == nil }

    /// Waits, bounded, for the process to exit, and returns its exit status.
    public func waitForExit(within seconds: Double = 10, _ what: String) async throws -> Int32 {
        try await eventually(within: seconds, what) { exitStatus }
    }

    /// Sends SIGKILL to the process (by its PID) and reaps it.
    public func kill() async {
        if isRunning {
            Glibc.kill(pid, SIGKILL)
        }
        _ = try? await waitForExit(within: 5, "process \(pid) to exit after SIGKILL")
    }

    /// Sends `signal` (by PID), then blocks until the child is reaped; after `seconds` it sends SIGKILL. For
    /// synchronous teardown (a `defer`), where the async forms cannot be used.
    public func stopBlocking(signal: Int32 = SIGTERM, seconds: Double = 5) {
        guard isRunning else { return }
        Glibc.kill(pid, signal)
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning {
            if Date() > deadline {
                Glibc.kill(pid, SIGKILL)
                while isRunning { usleep(10_000) }
                return
            }
            usleep(10_000)
        }
    }
}
