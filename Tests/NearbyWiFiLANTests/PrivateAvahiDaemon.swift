import NearbyTestSupport
import Foundation

/// A second dbus-daemon + avahi-daemon pair that one test owns and may kill, so that the daemon shared by the
/// other tests is never touched. This avahi uses no interface at all (`allow-interfaces` names none that exists),
/// so it sends nothing and cannot clash with the shared daemon on `lo`; services registered on it are established
/// at once but never visible to browsers. It gets a private `/run` through `unshare -m`. Stopped by PID (SIGKILL).
final class PrivateAvahiDaemon {
    let directory: URL
    /// The `DBUS_SYSTEM_BUS_ADDRESS` for clients of this daemon.
    let busAddress: String
    private var dbus: SpawnedProcess?
    private var avahi: SpawnedProcess?
    private var avahiStarts = 0

    private init(directory: URL) {
        self.directory = directory
        busAddress = "unix:path=\(directory.appendingPathComponent("bus.sock").path)"
    }

    /// Starts dbus-daemon and avahi-daemon; throws if either is not up within 10 s.
    static func start() async throws -> PrivateAvahiDaemon {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("nearby-private-avahi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let daemon = PrivateAvahiDaemon(directory: directory)
        do {
            try await daemon.startDBus()
            try await daemon.startAvahi()
        } catch {
            await daemon.stop()
            throw error
        }
        return daemon
    }

    private func startDBus() async throws {
        let socket = directory.appendingPathComponent("bus.sock")
        let config = directory.appendingPathComponent("dbus.conf")
        try """
        <busconfig><type>system</type>
          <listen>unix:path=\(socket.path)</listen><auth>EXTERNAL</auth>
          <policy context="default"><allow user="*"/><allow own="*"/>
            <allow send_destination="*"/><allow receive_sender="*"/></policy></busconfig>
        """.write(to: config, atomically: true, encoding: .utf8)
        dbus = try startLoggedProcess(
            "/usr/bin/dbus-daemon", ["--config-file=\(config.path)", "--nofork", "--nopidfile"], log: "dbus.log"
        )
        _ = try await eventually("the private dbus-daemon's socket") {
            FileManager.default.fileExists(atPath: socket.path) ? true : nil
        }
    }

    /// Starts (or restarts) avahi-daemon and waits for "Server startup complete".
    func startAvahi() async throws {
        avahiStarts += 1
        let config = directory.appendingPathComponent("avahi.conf")
        try """
        [server]
        host-name=nearby-test-private
        use-ipv4=yes
        use-ipv6=no
        allow-interfaces=nearby-none
        [wide-area]
        enable-wide-area=no
        [publish]
        publish-hinfo=no
        publish-workstation=no
        """.write(to: config, atomically: true, encoding: .utf8)
        let log = "avahi-\(avahiStarts).log"
        // unshare and sh exec into avahi-daemon, so the process's PID is the daemon's.
        avahi = try startLoggedProcess(
            "/usr/bin/unshare",
            [
                "-m", "--propagation", "private", "/bin/sh", "-c",
                "mount -n -t tmpfs tmpfs /run && mkdir -p /run/avahi-daemon && "
                    + "exec avahi-daemon --no-drop-root --no-chroot --no-rlimits -f \"$0\"",
                config.path,
            ],
            log: log,
            environment: ["DBUS_SYSTEM_BUS_ADDRESS": busAddress]
        )
        let logURL = directory.appendingPathComponent(log)
        _ = try await eventually("the private avahi-daemon to start") {
            let text = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
            return text.contains("Server startup complete") ? true : nil
        }
    }

    /// Kills avahi-daemon (SIGKILL, by PID), as if it crashed.
    func killAvahi() async {
        await avahi?.kill()
        avahi = nil
    }

    /// Kills both daemons by PID and removes the directory.
    func stop() async {
        await killAvahi()
        await dbus?.kill()
        dbus = nil
        try? FileManager.default.removeItem(at: directory)
    }

    private func startLoggedProcess(
        _ path: String,
        _ arguments: [String],
        log: String,
        environment: [String: String] = [:]
    ) throws -> SpawnedProcess {
        try SpawnedProcess(
            path,
            arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            outputPath: directory.appendingPathComponent(log).path
        )
    }
}
