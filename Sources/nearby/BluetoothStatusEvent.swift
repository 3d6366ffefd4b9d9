import NearbyConnections
import NearbyMessages

/// `bluetooth_status`: the Bluetooth radio BLE runs on has a problem (`has_error` true; `problem` is `poweredOff`,
/// `permissionDenied` or `unavailable`) or it cleared.
struct BluetoothStatusEvent: Encodable {
    var hasError: Bool
    var problem: String?
    var error: String?

    init(_ status: BluetoothStatus) {
        hasError = status.hasError
        problem = status.problem?.rawValue
        error = status.error?.message
    }

    init(_ status: RadioStatus) {
        hasError = status.hasError
        problem = status.problem?.rawValue
        error = status.error?.message
    }
}

extension ConnectionManager {
    /// Prints the BLE radio's problems and their clearing as `bluetooth_status` events.
    func printBluetoothStatus(to output: EventOutput) {
        bluetoothStatusHandler = { status in
            output.event("bluetooth_status", BluetoothStatusEvent(status), human: "bluetooth: \(status)")
        }
    }
}

extension MessageManager {
    /// Prints Bluetooth problems and their clearing as `bluetooth_status` events.
    func printBluetoothStatus(to output: EventOutput) {
        radioStatusHandler = { status in
            guard status.radio == .bluetooth else { return }
            output.event("bluetooth_status", BluetoothStatusEvent(status), human: "\(status)")
        }
    }
}
