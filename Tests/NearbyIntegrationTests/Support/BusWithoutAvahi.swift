import Foundation
import NearbyTestSupport

/// A private `dbus-daemon` with nothing on it: a system bus where avahi-daemon is "stopped", for one test, without
/// touching the avahi-daemon the other tests share. Stopped by PID.
final class BusWithoutAvahi: Sendable {
    let directory: URL
    let process: SpawnedProcess
    /// The bus address, for `DBUS_SYSTEM_BUS_ADDRESS`.
    let address: String

    init(in root: URL) async throws {
        directory = root.appendingPathComponent("bus-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let output = directory.appendingPathComponent("address")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        process = try SpawnedProcess(
            "/usr/bin/dbus-daemon",
            ["--session", "--nofork", "--nopidfile", "--print-address", "--address=unix:dir=\(directory.path)"],
            outputPath: output.path)
        address = try await eventually(within: 20, "the private dbus-daemon to print its address") {
            let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
            return text.split(separator: "\n").first { $0.hasPrefix("unix:") }.map(String.init)
        }
    }

    func stop() {
        process.stopBlocking(signal: SIGKILL)
    }
}
