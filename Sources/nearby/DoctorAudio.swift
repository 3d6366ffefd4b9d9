import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The audio check: is a sound server (PulseAudio, or PipeWire's Pulse server) reachable, for the audio medium of
/// `nearby publish|subscribe --medium audio`. Audio is optional, so a missing server is a warning.
enum DoctorAudioCheck {
    static func run(environment: DoctorEnvironment) -> DoctorCheck {
        let runtime = environment.variables["XDG_RUNTIME_DIR"] ?? "/run/user/\(getuid())"
        let server = environment.variables["PULSE_SERVER"]
        let path: String
        if let server, !server.isEmpty {
            if server.hasPrefix("tcp:") || server.contains(":") && !server.hasPrefix("unix:") && !server.hasPrefix("/") {
                return DoctorCheck(
                    check: "audio", status: .skip, summary: "PULSE_SERVER is \(server): a network server, not checked")
            }
            path = server.hasPrefix("unix:") ? String(server.dropFirst(5)) : server
        } else {
            path = runtime + "/pulse/native"
        }
        let pipewire = environment.exists(runtime + "/pipewire-0")
        var details = ["socket \(path)"]
        if pipewire { details.append("PipeWire runs (\(runtime)/pipewire-0)") }
        if let failure = connect(path) {
            return DoctorCheck(
                check: "audio", status: .warn,
                summary: "no sound server at \(path) (\(failure)): the audio medium (--medium audio) cannot work",
                details: details,
                fix: pipewire
                    ? "systemctl --user start pipewire-pulse"
                    : "start PipeWire (systemctl --user start pipewire pipewire-pulse) or PulseAudio, or set PULSE_SERVER")
        }
        return DoctorCheck(
            check: "audio", status: .ok,
            summary: "a \(pipewire ? "PipeWire (Pulse)" : "PulseAudio") server answers: the audio medium can play and record",
            details: details)
    }

    /// Connects to a Unix socket; the reason when it fails.
    private static func connect(_ path: String) -> String? {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return ErrorText.reason(errno: errno) }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return "path too long" }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: bytes)
            buffer[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return result == 0 ? nil : ErrorText.reason(errno: errno)
    }
}
