import NearbyConnections
import NearbyCore

extension ConnectionOptions {
    /// Runs the manager over in-memory mediums instead of radios: managers whose mediums share one
    /// ``InMemoryMedium/Air`` find each other and connect, with the real handshake, encryption and payloads.
    ///
    /// ```swift
    /// let air = InMemoryMedium.Air()
    /// var options = ConnectionOptions()
    /// options.useInMemoryMediums([InMemoryMedium(air: air)])
    /// ```
    ///
    /// `ConnectionOptions.mediums` then lists the kinds these mediums report; `ConnectionOptions.bluetoothController`
    /// is not used.
    public mutating func useInMemoryMediums(_ mediums: [InMemoryMedium]) {
        drivers = mediums
        self.mediums = mediums.map { $0.kind == .ble ? .ble : .wifiLAN }
    }
}
