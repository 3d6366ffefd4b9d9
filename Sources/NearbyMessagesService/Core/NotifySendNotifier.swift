import Foundation
import Logging
import NearbyCore

/// Desktop notifications through `notify-send` (libnotify's tool, which talks to `org.freedesktop.Notifications`
/// on the session bus): each event runs `notify-send --app-name=nearby -- SUMMARY BODY` without waiting for it. The
/// fallback of ``DesktopNotifier`` when it cannot call the notification server over D-Bus itself.
///
/// The texts come from strangers, so they follow `--` (a text such as `--hint=…` is never taken for an option),
/// and at most ``maximumRunning`` `notify-send` processes run at once: a notification while that many run is
/// dropped (and logged once per episode), so a flood of messages cannot start a flood of processes.
public struct NotifySendNotifier: ServiceNotifier {
    /// The most `notify-send` processes running at once.
    public static let maximumRunning = 4

    /// The `notify-send` executable.
    public let executable: URL
    private let logger: Logger
    private let running = RunningProcesses()

    /// The notifier using `notify-send` from `path` (a `PATH`-style list, default this process's `PATH`); `nil`
    /// when there is none.
    public init?(path: String? = ProcessInfo.processInfo.environment["PATH"], logger: Logger = Logger(label: "nearby.service")) {
        let directories = (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        guard
            let found = directories.map({ URL(fileURLWithPath: String($0)).appendingPathComponent("notify-send") })
                .first(where: { FileManager.default.isExecutableFile(atPath: $0.path) })
        else { return nil }
        self.init(executable: found, logger: logger)
    }

    /// The notifier running `executable`.
    public init(executable: URL, logger: Logger = Logger(label: "nearby.service")) {
        self.executable = executable
        self.logger = logger
    }

    /// Runs `notify-send` for `event` (the texts of ``DesktopNotifier/texts(for:)``) unless ``maximumRunning`` run
    /// already; a failure to start it is logged, not thrown.
    public func notify(_ event: ServiceEvent) {
        switch running.start(limit: Self.maximumRunning) {
        case .started: break
        case .refused(let firstInEpisode):
            if firstInEpisode {
                logger.notice("notifications dropped: \(Self.maximumRunning) notify-send processes are still running")
            }
            return
        }
        let (summary, body) = DesktopNotifier.texts(for: event)
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--app-name=nearby", "--", summary, body]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let running = self.running
        process.terminationHandler = { _ in running.ended() }
        do {
            try process.run()
        } catch {
            running.ended()
            logger.warning("cannot run notify-send", metadata: ["path": "\(executable.path)", "error": "\(error)"])
        }
    }

    /// The `notify-send` processes running now (tests watch it fall back to 0).
    public var runningCount: Int { running.count }
}

/// Counts running `notify-send` processes against a limit.
final class RunningProcesses: Sendable {
    enum Start { case started, refused(firstInEpisode: Bool) }
    private let state = LockedValue((count: 0, refusing: false))

    var count: Int { state.withLock { $0.count } }

    func start(limit: Int) -> Start {
        state.withLock { state in
            guard state.count < limit else {
                defer { state.refusing = true }
                return .refused(firstInEpisode: !state.refusing)
            }
            state.count += 1
            state.refusing = false
            return .started
        }
    }

    func ended() {
        state.withLock { $0.count -= 1 }
    }
}
