import Foundation
import NearbyBlueZ
import NearbyTestSupport
import NearbyWire

/// A private `dbus-daemon --session` for one test, listening in a temporary directory; stopped by its PID.
final class PrivateBus: Sendable {
    let directory: URL
    /// The daemon, started with `posix_spawn` (a long-running Foundation `Process` can stall the reporting of
    /// every other child's exit in this test run: see `SpawnedProcess`).
    let process: SpawnedProcess
    /// The bus address it printed.
    let address: String

    /// Starts the daemon and waits for its address.
    init() async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-dbus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let output = directory.appendingPathComponent("address")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        process = try SpawnedProcess(
            "/usr/bin/dbus-daemon",
            ["--session", "--nofork", "--nopidfile", "--print-address", "--address=unix:dir=\(directory.path)"],
            outputPath: output.path)
        address = try await eventually(within: 20, "the private dbus-daemon to print its address") {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            // stdout and stderr share the file: the address is the line that starts with the transport.
            return text.split(separator: "\n").first { $0.hasPrefix("unix:") }.map(String.init)
        }
    }

    /// A new connection to the bus.
    func connect() async throws -> DBusClient {
        try await DBusClient.connect(address: address)
    }

    /// Stops the daemon (SIGKILL to its PID) and removes its directory.
    func stop() {
        process.stopBlocking(signal: SIGKILL)
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
