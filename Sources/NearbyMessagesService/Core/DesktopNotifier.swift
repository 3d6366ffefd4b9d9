import Foundation
import Logging
import NearbyMessages

/// Shows found/lost messages to the user; the service calls it for every event of every subscription.
public protocol ServiceNotifier: Sendable {
    /// Shows `event`; must not block.
    func notify(_ event: ServiceEvent)
}

/// Desktop notifications through `notify-send` (libnotify's tool, which talks to `org.freedesktop.Notifications`
/// on the session bus). Each event runs `notify-send --app-name=nearby SUMMARY BODY` without waiting for it.
public struct DesktopNotifier: ServiceNotifier {
    /// The `notify-send` executable.
    public let executable: URL
    private let logger: Logger

    /// The notifier using `notify-send` from `PATH`; `nil` when there is none (no notification service to reach).
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

    /// The summary and body `notify-send` gets for `event`: "Nearby message found" and the message text (or its
    /// size), at most 200 characters, with the markup characters the notification spec interprets escaped.
    public static func texts(for event: ServiceEvent) -> (summary: String, body: String) {
        let summary = event.kind == .lost ? "Nearby message lost" : "Nearby message found"
        var text = event.message.isEmpty && event.size > 0 ? "\(event.size) bytes" : event.message
        if text.count > 200 { text = String(text.prefix(199)) + "…" }
        text = String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
        let label = [event.namespace, event.type].filter { !$0.isEmpty }.joined(separator: "/")
        let body = (label.isEmpty ? "" : "[\(label)] ") + text
        return (summary, escapeMarkup(body))
    }

    static func escapeMarkup(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }

    /// Runs `notify-send` for `event`; a failure to start it is logged, not thrown.
    public func notify(_ event: ServiceEvent) {
        let (summary, body) = Self.texts(for: event)
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
