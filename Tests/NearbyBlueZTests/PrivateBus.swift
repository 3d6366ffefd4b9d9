import Foundation
import NearbyBlueZ
import NearbyTestSupport
import NearbyWire

/// A private `dbus-daemon --session` for one test, listening in a temporary directory; stopped by its PID.
final class PrivateBus: Sendable {
    let directory: URL
    let process: Process
    /// The bus address it printed.
    let address: String

    /// Starts the daemon and waits for its address.
    init() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-dbus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let output = directory.appendingPathComponent("address")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--nopidfile", "--print-address", "--address=unix:dir=\(directory.path)"]
        process.standardOutput = try FileHandle(forWritingTo: output)
        process.standardError = FileHandle.nullDevice
        try process.run()
        address = try await eventually(within: 20, "the private dbus-daemon to print its address") {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").first.map(String.init)
        }
    }

    /// A new connection to the bus.
    func connect() async throws -> DBusClient {
        try await DBusClient.connect(address: address)
    }

    /// Stops the daemon (SIGKILL to its PID: it inherits the test runner's blocked SIGTERM) and removes its
    /// directory.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with a private bus, stopping it afterwards whatever happens.
func withPrivateBus<T>(_ body: (PrivateBus) async throws -> T) async throws -> T {
    let bus = try await PrivateBus()
    do {
        let result = try await body(bus)
        bus.stop()
        return result
    } catch {
        bus.stop()
        throw error
    }
}
