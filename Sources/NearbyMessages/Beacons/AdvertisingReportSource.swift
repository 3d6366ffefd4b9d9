/// One BLE advertising report: who sent it, how strong it arrived, and its AD structures.
public struct AdvertisingReport: Sendable, Hashable {
    /// The advertiser's device address, e.g. `"F0:0D:12:34:56:78"`.
    public var address: String
    /// The RSSI in dBm.
    public var rssi: Int
    /// The advertising data (or scan response): AD structures, without HCI headers.
    public var data: [UInt8]

    /// Creates a report.
    public init(address: String, rssi: Int, data: [UInt8]) {
        self.address = address
        self.rssi = rssi
        self.data = data
    }
}

/// How a beacon scan should run; derived from ``BeaconStrategy``.
public struct BeaconScanSettings: Sendable, Hashable {
    /// Whether the scanner may use a low duty cycle (slower discovery, less power): true only when low power is
    /// preferred and iBeacons are not scanned for, as in Google's API.
    public var lowDutyCycle: Bool
}

/// A BLE scanner that yields advertising reports. The BLE medium's scanner conforms to it; tests feed fakes.
public protocol AdvertisingReportSource: Sendable {
    /// Starts scanning; the stream ends when the task iterating it is cancelled, or with an error (code
    /// `NearbyError.Code.bluetoothUnavailable`) when the controller cannot be used.
    func advertisingReports(_ settings: BeaconScanSettings) -> AsyncThrowingStream<AdvertisingReport, any Error>
}
