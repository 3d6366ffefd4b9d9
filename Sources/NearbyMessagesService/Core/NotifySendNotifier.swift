import Foundation
import Logging

/// Desktop notifications through `notify-send` (libnotify's tool, which talks to `org.freedesktop.Notifications`
/// on the session bus): each event runs `notify-send --app-name=nearby SUMMARY BODY` without waiting for it. The
/// fallback of ``DesktopNotifier`` when it cannot call the notification server over D-Bus itself.
public struct NotifySendNotifier: ServiceNotifier {
    /// The `notify-send` executable.
    public let executable: URL
    private let logger: Logger

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

    /// Runs `notify-send` for `event` (the texts of ``DesktopNotifier/texts(for:)``); a failure to start it is
    /// logged, not thrown.
    public func notify(_ event: ServiceEvent) {
        let (summary, body) = DesktopNotifier.texts(for: event)
        let process = Process()
        process.executableURL = executable
        process.arguments = ["--app-name=nearby", summary, body]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            logger.warning("cannot run notify-send", metadata: ["path": "\(executable.path)", "error": "\(error)"])
        }
    }
}
