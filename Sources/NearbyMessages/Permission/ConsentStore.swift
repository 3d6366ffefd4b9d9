import Foundation
import Logging
import NearbyCore

/// The user's persisted consent to nearby discovery: a file `consent` in `$XDG_CONFIG_HOME/swift-nearby/`
/// (default `~/.config/swift-nearby/`) holding `granted` or `denied`. No file means not granted.
///
/// Every store of the same directory in this process shares change notifications.
public final class ConsentStore: Sendable {
    /// The directory holding the `consent` file.
    public let directory: URL
    /// The file.
    public var fileURL: URL { directory.appendingPathComponent("consent") }

    private let handlers = LockedValue<[UUID: @Sendable (Bool) -> Void]>([:])
    private static let registry = LockedValue<[String: [WeakStore]]>([:])

    private struct WeakStore: @unchecked Sendable { weak var store: ConsentStore? }

    /// The default directory: `$XDG_CONFIG_HOME/swift-nearby`, or `~/.config/swift-nearby`.
    public static var defaultDirectory: URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            base = URL(fileURLWithPath: xdg, isDirectory: true)
        } else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            base = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".config", isDirectory: true)
        }
        return base.appendingPathComponent("swift-nearby", isDirectory: true)
    }

    /// Opens the store in `directory` (default ``defaultDirectory``); nothing is written until ``setGranted(_:)``.
    public init(directory: URL = ConsentStore.defaultDirectory) {
        self.directory = directory
        Self.registry.withLock { registry in
            registry[directory.standardizedFileURL.path, default: []].removeAll { $0.store == nil }
            registry[directory.standardizedFileURL.path, default: []].append(WeakStore(store: self))
        }
    }

    /// Whether consent is granted (read from the file each time).
    public var isGranted: Bool {
        guard let data = try? Data(contentsOf: fileURL), let text = String(data: data, encoding: .utf8) else { return false }
        return text.trimmingCharacters(in: .whitespacesAndNewlines) == "granted"
    }

    /// Persists the consent state, then calls the change handlers of every store of this directory when it changed.
    /// Call it only in response to a user action.
    public func setGranted(_ granted: Bool) throws {
        let before = isGranted
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let temporary = directory.appendingPathComponent(".consent.\(UUID().uuidString)")
        try Data((granted ? "granted\n" : "denied\n").utf8).write(to: temporary)
        if rename(temporary.path, fileURL.path) != 0 {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: fileURL.path])
        }
        guard before != granted else { return }
        let stores = Self.registry.withLock { $0[directory.standardizedFileURL.path, default: []].compactMap(\.store) }
        for store in stores { store.notify(granted) }
    }

    /// Flips the consent state and returns the new one.
    @discardableResult
    public func toggle() throws -> Bool {
        let granted = !isGranted
        try setGranted(granted)
        return granted
    }

    /// Calls `handler` with the new state whenever it changes through any store of this directory; returns a token
    /// for ``removeChangeHandler(_:)``.
    @discardableResult
    public func addChangeHandler(_ handler: @escaping @Sendable (Bool) -> Void) -> UUID {
        let key = UUID()
        handlers.withLock { $0[key] = handler }
        return key
    }

    /// Removes a handler added with ``addChangeHandler(_:)``.
    public func removeChangeHandler(_ token: UUID) {
        _ = handlers.withLock { $0.removeValue(forKey: token) }
    }

    private func notify(_ granted: Bool) {
        for handler in handlers.withLock({ Array($0.values) }) { handler(granted) }
    }
}

/// The answer to a consent request.
public enum ConsentDecision: Sendable, Hashable {
    /// Consent given and persisted.
    case grant
    /// Consent given for this process only (the CLI: running a command is consent for that run).
    case grantForThisRun
    /// Consent refused.
    case deny
}

/// Asks the user for consent when a publication or subscription starts and consent is not yet granted.
public typealias PermissionRequestHandler = @Sendable () async -> ConsentDecision

/// The default permission request: asks `Allow nearby discovery? [y/N]` on the terminal when standard input and
/// standard error are terminals; denies otherwise (it never blocks without a TTY).
public let terminalPermissionRequest: PermissionRequestHandler = {
    guard isatty(STDIN_FILENO) == 1, isatty(STDERR_FILENO) == 1 else { return .deny }
    FileHandle.standardError.write(Data("Allow this program to discover and be discovered by nearby devices? [y/N] ".utf8))
    // Owner: awaited here at once; it ends when `readLine()` returns (a line, or the end of standard input), which
    // cancellation does not hasten. Detached so the blocking read stays off the caller's executor.
    let answer = await Task.detached { readLine() }.value
    return answer?.lowercased().hasPrefix("y") == true ? .grant : .deny
}
