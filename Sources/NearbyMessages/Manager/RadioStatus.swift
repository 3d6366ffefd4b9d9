import Foundation
import NearbyBLE
import NearbyConnections
import NearbyWire

/// The state of a radio Nearby Messages depends on, reported when a problem appears and again, with ``hasError``
/// false, when it has cleared: Google's `bluetoothPowerErrorHandler` / `bluetoothPermissionErrorHandler`
/// (`GNSErrorStateHandler(hasError)`), with the radio and the reason added, plus mDNS (avahi-daemon), which Wi-Fi LAN
/// discovery needs. The microphone has its own status, `AudioDeviceStatus`, where the audio medium is built.
public struct RadioStatus: Sendable, Equatable, CustomStringConvertible {
    /// Which radio.
    public enum Radio: String, Sendable, Hashable {
        /// The Bluetooth controller (BLE medium, beacon scanning).
        case bluetooth
        /// mDNS through avahi-daemon (Wi-Fi LAN discovery and advertising).
        case mdns
    }

    /// What is wrong, as far as the system says.
    public enum Problem: String, Sendable, Hashable {
        /// The radio is off (Bluetooth powered off or blocked by rfkill).
        case poweredOff
        /// The process may not use it (no permission, e.g. CAP_NET_ADMIN for an HCI user channel).
        case permissionDenied
        /// It is missing or not running (no controller, transport gone, avahi-daemon not running).
        case unavailable
    }

    /// The radio.
    public var radio: Radio
    /// Whether the radio has a problem (false: the problem reported before has cleared).
    public var hasError: Bool
    /// The problem, when ``hasError``.
    public var problem: Problem?
    /// The error that revealed it, when ``hasError``.
    public var error: NearbyError?

    /// Creates a status.
    public init(radio: Radio, hasError: Bool, problem: Problem? = nil, error: NearbyError? = nil) {
        self.radio = radio
        self.hasError = hasError
        self.problem = problem
        self.error = error
    }

    /// Equal radio, ``hasError`` and ``problem`` (the error's text is not compared).
    public static func == (lhs: RadioStatus, rhs: RadioStatus) -> Bool {
        lhs.radio == rhs.radio && lhs.hasError == rhs.hasError && lhs.problem == rhs.problem
    }

    /// `bluetooth: permissionDenied (…)` or `mdns: ok`.
    public var description: String {
        guard hasError else { return "\(radio.rawValue): ok" }
        return "\(radio.rawValue): \(problem?.rawValue ?? "error")" + (error.map { " (\($0.message))" } ?? "")
    }
}

extension RadioStatus.Problem {
    /// The problem `error` stands for: the system's words for a radio that is off (`ERFKILL`, "powered off",
    /// `org.bluez.Error.Blocked`) or a permission refusal (`EPERM`, `EACCES`, D-Bus `AccessDenied`), in the error
    /// or its causes; otherwise ``unavailable``.
    init(_ error: NearbyError) {
        switch BLERadioProblem(classifying: error) {
        case .poweredOff: self = .poweredOff
        case .permissionDenied: self = .permissionDenied
        case .unavailable: self = .unavailable
        }
    }

    /// The Messages problem for a Connections Bluetooth problem.
    init(_ problem: BluetoothStatus.Problem) {
        switch problem {
        case .poweredOff: self = .poweredOff
        case .permissionDenied: self = .permissionDenied
        case .unavailable: self = .unavailable
        }
    }
}

/// Which radio states were reported, as a value: feed it problems and signs of health, deliver the statuses it
/// returns (each transition once: a problem is not repeated while it lasts, a clearing only follows a problem).
package struct RadioStates: Sendable {
    private var failing: [RadioStatus.Radio: RadioStatus.Problem] = [:]

    package init() {}

    /// Whether `radio` currently has a reported problem.
    package func hasError(_ radio: RadioStatus.Radio) -> Bool { failing[radio] != nil }

    /// `error` shows a problem with `radio`.
    package mutating func problem(
        _ radio: RadioStatus.Radio, _ error: NearbyError, kind: RadioStatus.Problem? = nil
    ) -> RadioStatus? {
        let problem = kind ?? RadioStatus.Problem(error)
        guard failing[radio] != problem else { return nil }
        failing[radio] = problem
        return RadioStatus(radio: radio, hasError: true, problem: problem, error: error)
    }

    /// `radio` works (a medium on it started, or its daemon is back).
    package mutating func working(_ radio: RadioStatus.Radio) -> RadioStatus? {
        guard failing.removeValue(forKey: radio) != nil else { return nil }
        return RadioStatus(radio: radio, hasError: false)
    }
}
