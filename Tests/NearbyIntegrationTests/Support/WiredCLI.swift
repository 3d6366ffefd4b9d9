import Foundation
import NearbyCore
import NearbyTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A `nearby` process whose standard streams the test chooses: stdin from a file, stdout to a file or to a
/// pseudo-terminal of a given size, stderr to a file. Started with `posix_spawn` (see `SpawnedProcess` for why not
/// Foundation's `Process`), reaped by PID; ``stop()`` ends it if it still runs.
final class WiredCLI: Sendable {
    let pid: pid_t
    let stdoutPath: String?
    let stderrPath: String
    private let terminal: PseudoTerminal?
    private let status = LockedValue<Int32?>(nil)

    /// Where standard output goes.
    enum Output {
        case file(String)
        case terminal(columns: UInt16, rows: UInt16)
    }

    /// Starts `nearby ARGUMENTS`; `environment` is added to this process's.
    init(
        _ arguments: [String], stdin: String = "/dev/null", stdout: Output, stderr: String,
        environment: [String: String] = [:]
    ) throws {
        let executable = try IntegrationEnvironment.nearbyExecutable().path
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, stdin, O_RDONLY, 0)
        var terminal: PseudoTerminal?
        switch stdout {
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            stdoutPath = path
        case .terminal(let columns, let rows):
            let made = try PseudoTerminal(columns: columns, rows: rows)
            posix_spawn_file_actions_adddup2(&actions, made.follower, 1)
            terminal = made
            stdoutPath = nil
        }
        posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap({ Int32($0) }) where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGHUP, SIGINT, SIGPIPE, SIGTERM, SIGCHLD, SIGUSR1] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        if case .terminal = stdout, environment["COLUMNS"] == nil { variables["COLUMNS"] = nil }
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = variables.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw IntegrationFailure("posix_spawn nearby: \(String(cString: strerror(result)))") }
        self.pid = pid
        self.stderrPath = stderr
        terminal?.startReading()
        self.terminal = terminal
    }

    /// The exit status (128 + N after signal N), or `nil` while it runs.
    var exitStatus: Int32? {
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

    /// Waits, bounded, for the exit; returns the status.
    func waitForExit(within seconds: Double = 60) async throws -> Int32 {
        try await eventually(within: seconds, "nearby \(pid) to exit\n\(diagnostics)") { exitStatus }
    }

    /// Everything written to the terminal so far (the raw bytes, escape sequences included).
    var terminalText: String { terminal?.text ?? "" }

    /// Waits until the terminal has shown everything (the child closed its side).
    func waitForTerminalEnd(within seconds: Double = 10) async throws {
        guard let terminal else { return }
        _ = try await eventually(within: seconds, "the terminal to close") { terminal.ended ? true : nil }
    }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
    var stdoutText: String { stdoutPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? "" }

    /// The stdout lines that are JSON events (stderr's too, for `--stream-to -`).
    func events(fromStderr: Bool = false) -> [JSONEvent] {
        (fromStderr ? stderr : stdoutText).split(separator: "\n").compactMap { JSONEvent(line: String($0)) }
    }

    var diagnostics: String {
        "--- stderr:\n\(String(stderr.suffix(3000)))\n--- stdout:\n\(String(stdoutText.suffix(2000)))\(String(terminalText.suffix(2000)))"
    }

    /// Ends the process if it still runs (SIGTERM, then SIGKILL after 5 s) and reaps it.
    func stop() {
        guard exitStatus == nil else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while exitStatus == nil && Date() < deadline { usleep(20_000) }
        if exitStatus == nil { kill(pid, SIGKILL) }
        let reap = Date().addingTimeInterval(5)
        while exitStatus == nil && Date() < reap { usleep(20_000) }
    }
}

/// A pseudo-terminal pair: the child writes to the follower side, a thread reads the leader side.
final class PseudoTerminal: Sendable {
    let leader: Int32
    let follower: Int32
    private let output = LockedValue((data: Data(), ended: false))

    init(columns: UInt16, rows: UInt16) throws {
        // posix_openpt and friends, by hand (Glibc's module does not export them): the multiplexer, unlock
        // (TIOCSPTLCK), the follower's number (TIOCGPTN). grantpt has nothing to do on devpts.
        leader = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard leader >= 0, ioctl(leader, 0x4004_5431, &unlock) == 0, ioctl(leader, 0x8004_5430, &number) == 0 else {
            throw IntegrationFailure("no pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        follower = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard follower >= 0 else { throw IntegrationFailure("cannot open /dev/pts/\(number)") }
        var size = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(leader, UInt(TIOCSWINSZ), &size)
        // Raw output: no "\n" → "\r\n" translation, so the test sees what the tool wrote.
        var settings = termios()
        tcgetattr(follower, &settings)
        settings.c_oflag &= ~tcflag_t(OPOST)
        tcsetattr(follower, TCSANOW, &settings)
    }

    /// Reads the leader side on a thread of its own until the child closes the follower side. Closes our copy of
    /// the follower first, so that the end is seen.
    func startReading() {
        close(follower)
        let output = self.output
        let leader = self.leader
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(leader, &buffer, buffer.count)
                if count <= 0 {
                    if count < 0 && errno == EINTR { continue }
                    break
                }
                output.withLock { $0.data.append(contentsOf: buffer[0..<count]) }
            }
            close(leader)
            output.withLock { $0.ended = true }
        }.start()
    }

    var text: String { output.withLock { String(decoding: $0.data, as: UTF8.self) } }
    var ended: Bool { output.withLock { $0.ended } }
}
