import NearbyConnections
import NearbyCore
import NearbyWire
import Testing

@testable import NearbyMessages

/// The Connections managers' Bluetooth statuses feeding `radioStatusHandler`: the kind the radio told is kept
/// (not re-read from the message), each transition is reported once, and the clearing follows.
@Suite(.timeLimit(.minutes(5))) struct BluetoothStatusBridgeTests {
    @Test func connectionsStatusesReachTheRadioStatusHandlerOncePerTransition() {
        let monitor = RadioStateMonitor()
        let heard = LockedValue<[RadioStatus]>([])
        monitor.handler = { status in heard.withLock { $0.append(status) } }
        let lost = NearbyError(.mediumUnavailable, "the HCI transport was closed")
        monitor.bluetooth(BluetoothStatus(hasError: true, problem: .unavailable, error: lost))
        monitor.bluetooth(BluetoothStatus(hasError: true, problem: .unavailable, error: lost))
        #expect(monitor.hasError(.bluetooth))
        // The kind comes from the radio: a message without the system's words still reads as powered off.
        let off = NearbyError(.bluetoothUnavailable, "adapter off")
        monitor.bluetooth(BluetoothStatus(hasError: true, problem: .poweredOff, error: off))
        monitor.bluetooth(BluetoothStatus(hasError: false))
        monitor.bluetooth(BluetoothStatus(hasError: false))
        #expect(heard.withLock { $0 } == [
            RadioStatus(radio: .bluetooth, hasError: true, problem: .unavailable),
            RadioStatus(radio: .bluetooth, hasError: true, problem: .poweredOff),
            RadioStatus(radio: .bluetooth, hasError: false),
        ])
        #expect(heard.withLock { $0.first?.error?.message } == lost.message)
        #expect(!monitor.hasError(.bluetooth))
    }

    @Test func gnsRoutesRadioClearingToThePowerHandler() {
        let power = LockedValue<[Bool]>([])
        let permission = LockedValue<[Bool]>([])
        let params = GNSMessageManagerParams()
        params.bluetoothPowerErrorHandler = { hasError in power.withLock { $0.append(hasError) } }
        params.bluetoothPermissionErrorHandler = { hasError in permission.withLock { $0.append(hasError) } }
        let routing = GNSRadioRouting(params)
        routing.route(RadioStatus(radio: .bluetooth, hasError: true, problem: .unavailable))
        routing.route(RadioStatus(radio: .bluetooth, hasError: false))
        routing.route(RadioStatus(radio: .bluetooth, hasError: true, problem: .permissionDenied))
        routing.route(RadioStatus(radio: .bluetooth, hasError: false))
        #expect(power.withLock { $0 } == [true, false])
        #expect(permission.withLock { $0 } == [true, false])
    }
}
