import Foundation
import Logging
import NearbyConnections
import NearbyMessages
import NearbyWire

/// Shows found/lost messages to the user; the service calls it for every event of every subscription.
public protocol ServiceNotifier: Sendable {
    /// Shows `event`; must not block.
    func notify(_ event: ServiceEvent)
}

/// Desktop notifications for the service's found/lost messages: `org.freedesktop.Notifications` `Notify` over
/// the session bus when a notification server is there (running or D-Bus-activatable), else `notify-send` from
/// `PATH` (``NotifySendNotifier``); ``make(environment:logger:)`` returns `nil` when there is neither.
///
/// Each notification has the app name `nearby`, the summary "Nearby message found" or "Nearby message lost", and
/// the message as its body (``texts(for:)``).
public struct DesktopNotifier: ServiceNotifier {
    /// How notifications are shown.
    public enum Backend: Sendable, Hashable {
        /// `Notify` calls on the session bus at this D-Bus address (with `notify-send` as the fallback when a call
        /// fails, if it is on `PATH`).
        case dbus(address: String)
        /// `notify-send` runs.
        case notifySend(URL)
    }

    /// How notifications are shown.
    public let backend: Backend
    private let notifier: any ServiceNotifier

    /// The notifier this system offers: D-Bus when the session bus (`DBUS_SESSION_BUS_ADDRESS`, else
    /// `$XDG_RUNTIME_DIR/bus`) has `org.freedesktop.Notifications`, else `notify-send` from `PATH`, else `nil`.
    ///
    /// - Parameters:
    ///   - environment: Where the bus address, `XDG_RUNTIME_DIR` and `PATH` are read; default this process's.
    ///   - logger: Where failed notifications are reported.
    public static func make(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        logger: Logger = Logger(label: "nearby.service")
    ) async -> DesktopNotifier? {
        let fallback = NotifySendNotifier(path: environment["PATH"], logger: logger)
        if let address = sessionBusAddress(environment) {
            do {
                let dbus = try await DBusNotifier.connect(address: address, fallback: fallback, logger: logger)
                return DesktopNotifier(backend: .dbus(address: address), notifier: dbus)
            } catch {
                logger.debug("no notification server on the session bus", metadata: ["error": "\(error)"])
            }
        }
        guard let fallback else { return nil }
        return DesktopNotifier(backend: .notifySend(fallback.executable), notifier: fallback)
    }

    private init(backend: Backend, notifier: any ServiceNotifier) {
        self.backend = backend
        self.notifier = notifier
    }

    /// Shows `event`; returns at once (a failure is logged, not thrown).
    public func notify(_ event: ServiceEvent) {
        notifier.notify(event)
    }

    /// The session bus address of `environment`: `DBUS_SESSION_BUS_ADDRESS` (unless it asks for autolaunching),
    /// else `unix:path=$XDG_RUNTIME_DIR/bus` when that socket exists; `nil` otherwise.
    static func sessionBusAddress(_ environment: [String: String]) -> String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty {
            return address.hasPrefix("autolaunch:") ? nil : address
        }
        guard let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") else { return nil }
        let path = URL(fileURLWithPath: runtime).appendingPathComponent("bus").path
        return FileManager.default.fileExists(atPath: path) ? "unix:path=\(path)" : nil
    }

    /// The summary and body of the notification for `event`: "Nearby message found" (or "lost") and the message
    /// text (or its size), at most 200 characters, prefixed with `[namespace/type]` when they are not empty (each
    /// at most 64 characters), with every control character, bidirectional control and line or paragraph
    /// separator (`PeerText`'s unsafe scalars, which could reorder or break what is shown) made a space, and the
    /// markup characters the notification spec interprets escaped.
    public static func texts(for event: ServiceEvent) -> (summary: String, body: String) {
        let summary = event.kind == .lost ? "Nearby message lost" : "Nearby message found"
        var text = event.message.isEmpty && event.size > 0 ? "\(event.size) bytes" : event.message
        if text.count > 200 { text = String(text.prefix(199)) + "…" }
        let label = [event.namespace, event.type].filter { !$0.isEmpty }.map { String($0.prefix(64)) }
            .joined(separator: "/")
        let body = (label.isEmpty ? "" : "[\(label)] ") + text
        return (summary, escapeMarkup(spacingUnsafeScalars(body)))
    }

    /// `text` with every scalar `PeerText` finds unsafe (and every other control character) made a space.
    static func spacingUnsafeScalars(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { scalar in
            PeerText.isUnsafe(scalar) || scalar.properties.generalCategory == .control ? " " : scalar
        }))
    }

    static func escapeMarkup(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
