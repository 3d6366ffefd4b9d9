import Logging
import NearbyBLE
import NearbyConnections
import NearbyWire

/// Beacon scanning on a Bluetooth LE radio (NearbyBLE's `BLERadio`): our user-space HCI host on a controller, or
/// the system's BlueZ.
///
/// Each ``advertisingReports(_:)`` stream makes a radio from the `--hci` string, opens it, scans (continuously, or
/// with the low-power preset when ``BeaconScanSettings/lowDutyCycle`` allows it) and yields every advertising report
/// until the iterating task is cancelled; then it stops scanning and releases the radio. A radio that cannot be
/// opened, or that fails while scanning, ends the stream with `NearbyError.Code.bluetoothUnavailable`.
public struct BLEBeaconScanner: AdvertisingReportSource {
    /// The radio (`tcp:HOST:PORT`, `uart:/dev/ttyX[@BAUD]`, `hci:N` or `bluez[:hciN]`).
    public let radio: BLERadioSpec
    private let logger: Logger

    /// A scanner on the radio `hci` names.
    /// - Throws: `.invalidArgument` when `hci` is not a valid transport string.
    public init(hci: String, logger: Logger = Logger(label: "nearby.beacons")) throws {
        radio = try BLERadioSpec(parsing: hci)
        self.logger = logger
    }

    /// Scans until the iterating task is cancelled.
    public func advertisingReports(_ settings: BeaconScanSettings)
        -> AsyncThrowingStream<NearbyMessages.AdvertisingReport, any Error>
    {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: NearbyMessages.AdvertisingReport.self, throwing: (any Error).self)
        let spec = self.radio
        let logger = self.logger
        // Owner: the stream: its `onTermination` cancels it (the consumer stopped iterating); it also ends when the
        // radio cannot be opened or its scan fails or ends.
        let task = Task {
            let radio = MediumFactory.radio(spec, logger: logger)
            do {
                try await radio.open()
            } catch {
                continuation.finish(throwing: NearbyError(
                    .bluetoothUnavailable, "cannot open the Bluetooth controller at \(spec)", cause: error))
                await radio.shutdown()
                return
            }
            do {
                let preset: ScanPreset = settings.lowDutyCycle ? .lowPower : .lowLatency
                for try await report in radio.scan(preset: preset) {
                    guard !report.data.isEmpty else { continue }
                    continuation.yield(NearbyMessages.AdvertisingReport(
                        address: report.address.description, rssi: Int(report.rssi), data: report.data))
                }
            } catch {
                continuation.finish(throwing: NearbyError(
                    .bluetoothUnavailable, "the Bluetooth controller at \(spec) failed", cause: error))
            }
            await radio.shutdown()
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
