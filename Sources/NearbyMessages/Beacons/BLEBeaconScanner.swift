import Logging
import NearbyBLE
import NearbyWire

/// Beacon scanning on a Bluetooth LE controller, through NearbyBLE's user-space HCI host.
///
/// Each ``advertisingReports(_:)`` stream opens the controller named by the `--hci` transport string, scans
/// (continuously, or with the low-power preset when ``BeaconScanSettings/lowDutyCycle`` allows it) and yields every
/// advertising report until the iterating task is cancelled; then it stops scanning and releases the controller.
/// A controller that cannot be opened, or that fails while scanning, ends the stream with
/// `NearbyError.Code.bluetoothUnavailable`.
public struct BLEBeaconScanner: AdvertisingReportSource {
    /// The controller's transport (`tcp:HOST:PORT`, `uart:/dev/ttyX[@BAUD]` or `hci:N`).
    public let transport: HCITransportSpec
    private let logger: Logger

    /// A scanner on the controller `hci` names.
    /// - Throws: `.invalidArgument` when `hci` is not a valid transport string.
    public init(hci: String, logger: Logger = Logger(label: "nearby.beacons")) throws {
        transport = try HCITransportSpec(parsing: hci)
        self.logger = logger
    }

    /// Scans until the iterating task is cancelled.
    public func advertisingReports(_ settings: BeaconScanSettings)
        -> AsyncThrowingStream<NearbyMessages.AdvertisingReport, any Error>
    {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: NearbyMessages.AdvertisingReport.self, throwing: (any Error).self)
        let transport = self.transport
        let logger = self.logger
        let task = Task {
            let host: BLEHost
            do {
                host = try await BLEHost.open(transport, logger: logger)
            } catch {
                continuation.finish(throwing: NearbyError(
                    .bluetoothUnavailable, "cannot open the Bluetooth controller at \(transport)", cause: error))
                return
            }
            let failureToken = await host.addFailureObserver { error in
                continuation.finish(throwing: NearbyError(
                    .bluetoothUnavailable, "the Bluetooth controller at \(transport) failed", cause: error))
            }
            do {
                let preset: ScanPreset = settings.lowDutyCycle ? .lowPower : .lowLatency
                let scanToken = try await host.addScanHandler(preset: preset) { report in
                    guard !report.data.isEmpty else { return }
                    continuation.yield(NearbyMessages.AdvertisingReport(
                        address: report.address.description, rssi: Int(report.rssi), data: report.data))
                }
                // Scans until the consumer cancels: the sleep ends on cancellation, nothing wakes up to poll.
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(86_400))
                }
                await host.removeScanHandler(scanToken)
            } catch {
                continuation.finish(throwing: NearbyError(
                    .bluetoothUnavailable, "cannot scan on the Bluetooth controller at \(transport)", cause: error))
            }
            await host.removeFailureObserver(failureToken)
            await host.close()
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
