import Foundation
import NearbyCore
import NearbyPulseAudio
import NearbyWire

/// A private PulseAudio daemon for one test: no sound card, one null sink named `nearby` (so its monitor,
/// `nearby.monitor`, is the source), a native-protocol socket in a temporary directory, no D-Bus, no config files.
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

    /// Starts the daemon and waits until it accepts a recording stream from the monitor.
    public init() async throws {
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
            [
                "-n", "--daemonize=no", "--exit-idle-time=-1", "--use-pid-file=no", "--log-target=stderr",
                "-L", "module-null-sink sink_name=nearby",
                "-L", "module-native-protocol-unix socket=\(directory.path)/native auth-anonymous=1",
            ],
            environment: [
                "PATH": path, "HOME": directory.path, "XDG_RUNTIME_DIR": directory.path,
                "XDG_CONFIG_HOME": directory.path,
            ],
            outputPath: logPath)
        let server = self.server
        let monitor = self.monitor
        _ = try await eventually(within: 20, "the private PulseAudio daemon to accept a recording stream") {
            (try? PulseAudioRecorder(server: server, source: monitor)).map { _ in true }
        }
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
