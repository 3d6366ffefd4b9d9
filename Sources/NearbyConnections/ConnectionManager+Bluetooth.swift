import NearbyBLE
import NearbyCore
import NearbyWire

/// Follows the radio state of a manager's BLE mediums and delivers ``BluetoothStatus`` transitions to the handler
/// (``ConnectionManager/bluetoothStatusHandler``).
final class BluetoothStatusWatch: Sendable {
    private struct Values {
        var tracker = BluetoothStatusTracker()
        var handler: (@Sendable (BluetoothStatus) -> Void)?
    }

    private let values = LockedValue(Values())

    /// Starts following every BLE medium among `drivers` (nothing happens until a medium is used), in tasks of
    /// the manager's scope.
    init(drivers: [any MediumDriver], tasks: TaskScope) {
        for states in drivers.compactMap({ ($0 as? BLEMedium)?.radioStates() }) {
            tasks.spawn { [weak self] in
                for await state in states {
                    guard let self else { return }
                    self.receive(state)
                }
            }
        }
    }

    var handler: (@Sendable (BluetoothStatus) -> Void)? {
        get { values.withLock { $0.handler } }
        set { values.withLock { $0.handler = newValue } }
    }

    func receive(_ state: BLERadioState) {
        let (status, handler) = values.withLock { ($0.tracker.receive(state), $0.handler) }
        if let status { handler?(status) }
    }
}

extension ConnectionManager {
    /// Called when the Bluetooth radio BLE runs on gets a problem and again, with `hasError` false, when it has
    /// cleared, once per transition: powered off or blocked by rfkill (``BluetoothStatus/Problem/poweredOff``),
    /// not permitted (``BluetoothStatus/Problem/permissionDenied``), or missing: no adapter, the HCI transport to
    /// the controller lost, `bluetoothd` gone (``BluetoothStatus/Problem/unavailable``).
    ///
    /// BLE recovers by itself: when the radio is usable again, advertising and discovery on it start again
    /// without restarting the process, and the handler hears the clearing. The radio is followed from the first
    /// BLE advertising, discovery or connection on. Called on an arbitrary thread.
    public var bluetoothStatusHandler: (@Sendable (BluetoothStatus) -> Void)? {
        get { bluetooth.handler }
        set { bluetooth.handler = newValue }
    }
}
