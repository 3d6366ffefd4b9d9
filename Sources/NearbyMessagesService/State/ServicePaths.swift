import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where the service listens and saves its state by default.
public enum ServicePaths {
    /// `$XDG_RUNTIME_DIR/nearby/service.sock`, or `/tmp/nearby-UID/service.sock` without `XDG_RUNTIME_DIR`.
    public static var defaultSocket: URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL =
            if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
                URL(fileURLWithPath: runtime, isDirectory: true).appendingPathComponent("nearby", isDirectory: true)
            } else {
                URL(fileURLWithPath: "/tmp/nearby-\(getuid())", isDirectory: true)
            }
        return base.appendingPathComponent("service.sock")
    }

    /// `$XDG_STATE_HOME/nearby/service.json`, or `~/.local/state/nearby/service.json`.
    public static var defaultStateFile: URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL =
            if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
                URL(fileURLWithPath: state, isDirectory: true)
            } else {
                URL(fileURLWithPath: environment["HOME"] ?? NSHomeDirectory(), isDirectory: true)
                    .appendingPathComponent(".local/state", isDirectory: true)
            }
        return base.appendingPathComponent("nearby", isDirectory: true).appendingPathComponent("service.json")
    }
}
