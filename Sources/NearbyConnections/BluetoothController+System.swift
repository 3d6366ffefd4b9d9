import NearbyBLE
import NearbyBlueZ
import NearbyWire

extension BluetoothController {
    /// The system's BlueZ on `adapter`: advertising, scanning and adapter state through `bluetoothd` on the system
    /// bus, L2CAP channels through the kernel's sockets bound to that adapter's address. The desktop keeps its
    /// Bluetooth. The same as `BluetoothController("bluez:hciN")`.
    /// - Parameter adapter: The kernel's name of the adapter, like `hci0`.
    /// - Throws: `NearbyError` `.invalidArgument` for a name that is not `hciN`.
    public static func bluez(adapter: String = "hci0") throws -> BluetoothController {
        try BluetoothController("bluez:\(adapter)")
    }

    /// The Bluetooth controller to use when the app names none: the system's BlueZ on its first adapter (lowest
    /// `hciN`) when `bluetoothd` is reachable on the system bus and has an adapter, otherwise `nil` (BLE is then
    /// not used). Each D-Bus step waits at most `timeout`; nothing is kept open afterwards.
    ///
    /// ```swift
    /// var options = ConnectionOptions(receiveDirectory: directory)
    /// if let bluetooth = await BluetoothController.systemDefault() {
    ///     options.mediums = [.wifiLAN, .ble]
    ///     options.bluetoothController = bluetooth
    /// }
    /// ```
    public static func systemDefault(timeout: Duration = .seconds(2)) async -> BluetoothController? {
        systemDefault(from: await BlueZSystemProbe.run(timeout: timeout))
    }

    /// The controller a probe result leads to: BlueZ on its default adapter, or `nil`.
    package static func systemDefault(from probe: BlueZSystemProbe.Result) -> BluetoothController? {
        guard let adapter = probe.defaultAdapter else { return nil }
        return try? bluez(adapter: adapter.name)
    }
}

/// What a command line that may not name a radio gets: the controller, the mediums, and why (for the log).
package struct BluetoothChoice: Sendable, Hashable {
    /// The controller BLE runs on; `nil` without BLE.
    package var controller: BluetoothController?
    /// The mediums, Wi-Fi LAN first.
    package var mediums: [MediumKind]
    /// How the controller was chosen, e.g. `--hci tcp:127.0.0.1:9000` or `BlueZ found: bluez:hci0`.
    package var reason: String

    /// Creates a choice.
    package init(controller: BluetoothController?, mediums: [MediumKind], reason: String) {
        self.controller = controller
        self.mediums = mediums
        self.reason = reason
    }
}

extension MediumFactory {
    /// The BLE choice of a command line: with a radio given (`--hci`), that radio; without one, the system's
    /// BlueZ when `probe` finds `bluetoothd` with an adapter (BLE joins Wi-Fi LAN by default), else Wi-Fi LAN
    /// only. BlueZ is probed only when BLE could be wanted (no mediums named, or BLE among them).
    /// - Throws: `NearbyError` `.bluetoothUnavailable` when BLE is named explicitly without a radio and BlueZ is
    ///   not there, saying why and what to give instead.
    package static func choose(
        given: BluetoothController?, named: Set<MediumKind>,
        probe: @Sendable () async -> BlueZSystemProbe.Result = { await BlueZSystemProbe.run() }
    ) async throws -> BluetoothChoice {
        if let given {
            return BluetoothChoice(
                controller: given, mediums: selection(named: named, hasBluetoothController: true),
                reason: "--hci \(given)")
        }
        guard named.isEmpty || named.contains(.ble) else {
            return BluetoothChoice(
                controller: nil, mediums: selection(named: named, hasBluetoothController: false),
                reason: "BLE not asked for")
        }
        let result = await probe()
        guard let controller = BluetoothController.systemDefault(from: result) else {
            let why: String
            if case .unavailable(let reason) = result { why = reason } else { why = "no BlueZ adapter" }
            if named.contains(.ble) {
                throw NearbyError(
                    .bluetoothUnavailable,
                    "BLE without --hci uses the system's BlueZ, which is not usable here: \(why). Give --hci bluez[:hciN] once bluetoothd runs, or --hci tcp:HOST:PORT, uart:/dev/ttyX[@BAUD] or hci:N for the user-space host")
            }
            return BluetoothChoice(
                controller: nil, mediums: selection(named: named, hasBluetoothController: false),
                reason: "Wi-Fi LAN only: \(why)")
        }
        return BluetoothChoice(
            controller: controller, mediums: selection(named: named, hasBluetoothController: true),
            reason: "BlueZ found: \(controller)")
    }
}
