import Foundation
import NearbyWire

/// What kind of problem makes a radio unusable, as far as the system says: the difference apps show their users
/// (turn Bluetooth on, grant a permission, or wait for the hardware).
package enum BLERadioProblem: String, Sendable, Hashable {
    /// Powered off, or blocked by rfkill (`ERFKILL`, `org.bluez.Error.Blocked`).
    case poweredOff
    /// The process may not use it: `EPERM`/`EACCES` opening the HCI user channel or a socket, or D-Bus
    /// `AccessDenied` / `org.bluez.Error.NotAuthorized`.
    case permissionDenied
    /// Missing or gone: no adapter, the HCI transport lost, `bluetoothd` not running.
    case unavailable

    /// The kind `error` stands for, read from the system's words in its message and causes.
    package init(classifying error: NearbyError) {
        var texts = [error.message]
        var cause = error.cause
        while let current = cause {
            texts.append(String(describing: current))
            cause = (current as? NearbyError)?.cause
        }
        let text = texts.joined(separator: " ").lowercased()
        if Self.powerWords.contains(where: text.contains) {
            self = .poweredOff
        } else if Self.permissionWords.contains(where: text.contains) {
            self = .permissionDenied
        } else {
            self = .unavailable
        }
    }

    private static let powerWords: [String] = [
        String(cString: strerror(132)).lowercased(),  // ERFKILL: "Operation not possible due to RF-kill"
        "rf-kill", "rfkill", "powered off", "power off", "org.bluez.error.blocked",
    ]

    private static let permissionWords: [String] = [EPERM, EACCES].map { String(cString: strerror($0)).lowercased() }
        + ["permission", "org.freedesktop.dbus.error.accessdenied", "org.bluez.error.notauthorized", "not authorized"]
}

extension BLERadioState {
    /// The problem's kind while unavailable; `nil` while powered.
    package var problem: BLERadioProblem? {
        guard case .unavailable(let error) = self else { return nil }
        return BLERadioProblem(classifying: error)
    }

    /// The error that makes the radio unavailable; `nil` while powered.
    package var error: NearbyError? {
        guard case .unavailable(let error) = self else { return nil }
        return error
    }
}
