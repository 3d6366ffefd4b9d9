import NearbyPulseAudio
import NearbyWire

/// The state of the microphone or speaker the audio medium uses, reported when a problem appears and again when it
/// clears (Google's `microphonePermissionErrorHandler`, a `GNSErrorStateHandler(hasError)`, with the reason added).
public struct AudioDeviceStatus: Sendable, CustomStringConvertible {
    /// Which device.
    public enum Device: String, Sendable, Hashable {
        /// The microphone (the sound server's default source): subscriptions scanning audio.
        case microphone
        /// The speaker (the default sink): publications broadcasting audio.
        case speaker
    }

    /// What is wrong.
    public enum Problem: String, Sendable, Hashable, Error {
        /// The sound server has no such device (no microphone, no speaker).
        case noDevice
        /// The sound server refused access.
        case permissionDenied
        /// The device is in use by someone else.
        case deviceBusy
        /// No sound server answered (not running, wrong `PULSE_SERVER`).
        case soundServerUnavailable
        /// Anything else.
        case other

        /// The problem an error of the audio I/O stands for: from its `PulseAudioFailure` cause (or a `Problem`
        /// cause), else ``other``.
        public init(_ error: any Error) {
            let cause = (error as? NearbyError)?.cause ?? error
            if let problem = cause as? Problem {
                self = problem
            } else if let failure = cause as? PulseAudioFailure {
                switch failure.problem {
                case .noDevice: self = .noDevice
                case .permissionDenied: self = .permissionDenied
                case .deviceBusy: self = .deviceBusy
                case .serverUnavailable: self = .soundServerUnavailable
                case .other: self = .other
                }
            } else {
                self = .other
            }
        }
    }

    /// The device.
    public var device: Device
    /// Whether the device has a problem (false: the problem reported before has cleared).
    public var hasError: Bool
    /// The problem, when ``hasError``.
    public var problem: Problem?
    /// The error the sound server gave, when ``hasError``.
    public var error: NearbyError?

    /// Creates a status.
    public init(device: Device, hasError: Bool, problem: Problem? = nil, error: NearbyError? = nil) {
        self.device = device
        self.hasError = hasError
        self.problem = problem
        self.error = error
    }

    /// The status for `error` of `device`.
    static func failed(_ device: Device, _ error: any Error) -> AudioDeviceStatus {
        let nearby = (error as? NearbyError)
            ?? NearbyError(.mediumUnavailable, "\(device.rawValue) unavailable", cause: error)
        return AudioDeviceStatus(device: device, hasError: true, problem: Problem(error), error: nearby)
    }

    /// `microphone: noDevice (…)` or `microphone: ok`.
    public var description: String {
        guard hasError else { return "\(device.rawValue): ok" }
        return "\(device.rawValue): \(problem?.rawValue ?? "error")" + (error.map { " (\($0.message))" } ?? "")
    }
}
