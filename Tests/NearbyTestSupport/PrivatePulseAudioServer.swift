import Foundation
import NearbyCore
import NearbyPulseAudio
import NearbyWire

/// A private PulseAudio daemon for one test: no sound card, one null sink named `nearby` (so its monitor,
/// `nearby.monitor`, is the source), a native-protocol socket in a temporary directory, no D-Bus, no config files.
/// Without the null sink it has no device at all until the test loads one (``pactl(_:)``).
public final class PrivatePulseAudioServer: Sendable {
    public let directory: URL
    /// The daemon, started with `posix_spawn` (Foundation's `Process` would stall every other child's exit
    /// report while it runs: see `SpawnedProcess`).
    public let process: SpawnedProcess
    /// The server string for clients: `unix:<directory>/native`.
    public var server: String { "unix:" + directory.appendingPathComponent("native").path }
    /// The sink the daemon plays into.
    public let sink = "nearby"
    /// The source that records what is played into the sink.
    public var monitor: String { sink + ".monitor" }

    /// Starts the daemon and waits until it accepts a recording stream from the monitor (or, with `nullSink` false,
    /// until it answers that it has no source).
    public init(nullSink: Bool = true) async throws {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        guard let executable = path.split(separator: ":").map({ "\($0)/pulseaudio" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else {
            throw NearbyError(.mediumUnavailable, "pulseaudio is not installed (scripts/install-deps.sh installs it)")
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-pulse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let logPath = directory.appendingPathComponent("log").path
        process = try SpawnedProcess(
            executable,
            ["-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--log-target=stderr"]
                + (nullSink ? ["-L", "module-null-sink sink_name=nearby"] : [])
                + ["-L", "module-native-protocol-unix socket=\(directory.path)/native auth-anonymous=1"],
            environment: [
                "PATH": path, "HOME": directory.path, "XDG_RUNTIME_DIR": directory.path,
                "XDG_CONFIG_HOME": directory.path,
            ],
            outputPath: logPath)
        let server = self.server
        let monitor = self.monitor
        _ = try await eventually(within: 20, "the private PulseAudio daemon to accept a recording stream") {
            do {
                _ = try PulseAudioRecorder(server: server, source: nullSink ? monitor : nil)
                return true
            } catch {
                // Without a device, a daemon that answers "no such entity" is up.
                let failure = (error as? NearbyError)?.cause as? PulseAudioFailure
                return !nullSink && failure?.problem == .noDevice ? true : nil
            }
        }
    }

    /// Runs `pactl` against this daemon (e.g. `load-module …`, `unload-module 7`) and returns what it printed,
    /// trimmed (a loaded module's index).
    /// - Throws: `NearbyError` `.unknown` when pactl fails.
    @discardableResult
    public func pactl(_ arguments: [String]) async throws -> String {
        let output = directory.appendingPathComponent("pactl-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = try SpawnedProcess("/usr/bin/pactl", ["-s", server] + arguments, outputPath: output.path)
        let status = try await process.waitForExit(within: 20, "pactl \(arguments.joined(separator: " "))")
        let text = ((try? String(contentsOf: output, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard status == 0 else {
            throw NearbyError(.unknown, "pactl \(arguments.joined(separator: " ")) exited with \(status): \(text)")
        }
        return text
    }

    /// Stops the daemon (by its PID) and removes its directory.
    public func stop() {
        process.stopBlocking()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs blocking `body` on a thread of its own (PulseAudio's simple API blocks) and returns its result.
///
/// The result also travels through a `LockedValue`, so ThreadSanitizer sees the hand-off from that thread to the
/// caller (it does not see a continuation resumed on a Foundation thread, swiftlang/swift#57803).
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let handOff = LockedValue<Result<T, any Error>?>(nil)
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        Thread.detachNewThread {
            let result = Result { try body() }
            handOff.withLock { $0 = result }
            continuation.resume()
        }
    }
    return try handOff.withLock { $0! }.get()
}
