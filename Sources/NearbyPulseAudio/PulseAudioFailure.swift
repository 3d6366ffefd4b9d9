import CPulseSimple
import NearbyWire

/// Why the sound server refused or dropped a stream: the cause attached to the `NearbyError` that
/// ``PulseAudioPlayer`` and ``PulseAudioRecorder`` throw, so a medium can tell the user what to fix (no microphone,
/// permission denied, device busy, no sound server).
public struct PulseAudioFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem, as far as the sound server says.
    public enum Problem: String, Sendable, Hashable {
        /// No sound server answered (not running, wrong `PULSE_SERVER`, socket unreachable).
        case serverUnavailable
        /// The requested sink or source does not exist (no microphone, no speaker).
        case noDevice
        /// The server refused access (permission, authentication).
        case permissionDenied
        /// The device is in use by someone else.
        case deviceBusy
        /// Anything else.
        case other
    }

    /// The kind of problem.
    public var problem: Problem
    /// PulseAudio's error code (`PA_ERR_*`).
    public var code: Int32
    /// PulseAudio's text for the code.
    public var text: String

    /// Describes PulseAudio error `code`.
    public init(code: Int32) {
        self.code = code
        text = pa_strerror(code).map { String(cString: $0) } ?? "PulseAudio error \(code)"
        switch code {
        case Int32(PA_ERR_CONNECTIONREFUSED.rawValue), Int32(PA_ERR_CONNECTIONTERMINATED.rawValue),
            Int32(PA_ERR_INVALIDSERVER.rawValue), Int32(PA_ERR_TIMEOUT.rawValue):
            problem = .serverUnavailable
        case Int32(PA_ERR_NOENTITY.rawValue):
            problem = .noDevice
        case Int32(PA_ERR_ACCESS.rawValue), Int32(PA_ERR_AUTHKEY.rawValue):
            problem = .permissionDenied
        case Int32(PA_ERR_BUSY.rawValue), Int32(PA_ERR_EXIST.rawValue):
            problem = .deviceBusy
        default:
            problem = .other
        }
    }

    /// `problem (text)`.
    public var description: String { "\(problem.rawValue) (\(text))" }

    /// A `mediumUnavailable` error saying what failed, with this failure as its cause.
    func error(_ what: String) -> NearbyError {
        NearbyError(.mediumUnavailable, "\(what): \(text)", cause: self)
    }
}
