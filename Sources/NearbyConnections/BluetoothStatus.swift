import NearbyBLE
import NearbyWire

/// The state of the Bluetooth radio BLE runs on, reported to ``ConnectionManager/bluetoothStatusHandler`` when a
/// problem appears and again, with ``hasError`` false, when it has cleared (the shape of Google's
/// `GNSErrorStateHandler(hasError)` for Bluetooth power and permission, with the kind of problem and the reason
/// added).
public struct BluetoothStatus: Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, as far as the system says.
    public enum Problem: String, Sendable, Hashable {
        /// Bluetooth is powered off or blocked by rfkill: the user can turn it on.
        case poweredOff
        /// The process may not use it: `EPERM`/`EACCES` opening the HCI user channel or an L2CAP socket (missing
        /// `CAP_NET_ADMIN` / `CAP_NET_RAW`), or D-Bus `AccessDenied` from `bluetoothd`.
        case permissionDenied
        /// It is missing or gone: no adapter, the HCI transport to the controller lost, `bluetoothd` not running.
        case unavailable
    }

    /// Whether Bluetooth has a problem (false: the problem reported before has cleared).
    public var hasError: Bool
    /// The problem, when ``hasError``.
    public var problem: Problem?
    /// The error that revealed it, when ``hasError``.
    public var error: NearbyError?

    /// Creates a status.
    public init(hasError: Bool, problem: Problem? = nil, error: NearbyError? = nil) {
        self.hasError = hasError
        self.problem = problem
        self.error = error
    }

    /// Equal ``hasError`` and ``problem`` (the error's text is not compared).
    public static func == (lhs: BluetoothStatus, rhs: BluetoothStatus) -> Bool {
        lhs.hasError == rhs.hasError && lhs.problem == rhs.problem
    }

    /// `poweredOff (…)`, `permissionDenied (…)`, `unavailable (…)` or `ok`.
    public var description: String {
        guard hasError else { return "ok" }
        return (problem?.rawValue ?? "error") + (error.map { " (\($0.message))" } ?? "")
    }
}

extension BluetoothStatus.Problem {
    /// The public problem for a radio problem.
    init(_ problem: BLERadioProblem) {
        switch problem {
        case .poweredOff: self = .poweredOff
        case .permissionDenied: self = .permissionDenied
        case .unavailable: self = .unavailable
        }
    }
}

/// Turns radio states into Bluetooth statuses, each transition once: a problem when the radio becomes unusable
/// (again when the kind of problem changes), a clearing when it is usable after a problem; nothing for a radio
/// that was fine all along.
package struct BluetoothStatusTracker: Sendable {
    private var reported: BluetoothStatus.Problem?

    package init() {}

    /// Whether a problem is reported and not cleared.
    package var hasError: Bool { reported != nil }

    /// The status `state` means, or `nil` when it changes nothing reported.
    package mutating func receive(_ state: BLERadioState) -> BluetoothStatus? {
        switch state {
        case .powered:
            guard reported != nil else { return nil }
            reported = nil
            return BluetoothStatus(hasError: false)
        case .unavailable(let error):
            let problem = BluetoothStatus.Problem(BLERadioProblem(classifying: error))
            guard reported != problem else { return nil }
            reported = problem
            return BluetoothStatus(hasError: true, problem: problem, error: error)
        }
    }
}
