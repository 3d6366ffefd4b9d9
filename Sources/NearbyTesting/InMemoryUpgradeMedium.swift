import NearbyCore
import NearbyWire

/// An in-memory bandwidth upgrade target that reports itself as Wi-Fi LAN: its listeners live on the air, its
/// paths are WIFI_LAN paths at 10.0.0.1 with the listener's port. Add it next to an ``InMemoryMedium`` of kind
/// `.ble` to exercise the move from BLE to Wi-Fi LAN.
public final class InMemoryUpgradeMedium: MediumDriver {
    /// Always Wi-Fi LAN.
    public let kind: MediumKind = .wifiLAN
    /// The air the upgrade listeners live on.
    public let air: InMemoryMedium.Air
    /// Runs before every upgrade connection; it may wait (to hold the upgrade back) or throw (to fail it).
    public let beforeConnecting: @Sendable () async throws -> Void
    private static let nextPort = LockedValue<Int32>(20_000)
    /// How many upgrade connections were attempted.
    public let connectAttempts = LockedValue(0)

    /// Creates the medium on `air`.
    public init(air: InMemoryMedium.Air, beforeConnecting: @escaping @Sendable () async throws -> Void = {}) {
        self.air = air
        self.beforeConnecting = beforeConnecting
    }

    /// How many upgrade listeners are open on the air.
    public var openListeners: Int { air.upgradeListeners.withLock { $0.count } }

    /// Always `true`.
    public var supportsUpgradeListening: Bool { true }

    final class Listener: UpgradeListener {
        let medium: MediumKind = .wifiLAN
        let pathInfo: UpgradePathInfo
        let port: Int32
        let air: InMemoryMedium.Air
        init(port: Int32, air: InMemoryMedium.Air) {
            self.port = port
            self.air = air
            pathInfo = OfflineFrames.wifiLanUpgradePath(addresses: [[10, 0, 0, 1]], port: port)
        }
        func stop() async { _ = air.upgradeListeners.withLock { $0.removeValue(forKey: port) } }
    }

    /// Opens a listener on the air for one upgrade.
    public func startUpgradeListener(
        onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any UpgradeListener {
        let port = Self.nextPort.withLock { value in value += 1; return value }
        air.upgradeListeners.withLock { $0[port] = onIncoming }
        return Listener(port: port, air: air)
    }

    /// Connects to the listener the offered path names, after ``beforeConnecting``.
    public func connectForUpgrade(to path: UpgradePathInfo) async throws -> any EndpointChannel {
        connectAttempts.withLock { $0 += 1 }
        try await beforeConnecting()
        guard let onIncoming = air.upgradeListeners.withLock({ $0[path.wifiLanSocket.wifiPort] }) else {
            throw NearbyError(.endpointIoError, "nothing listens for an upgrade at port \(path.wifiLanSocket.wifiPort)")
        }
        let (local, remote) = InMemoryChannel.pair(medium: .wifiLAN)
        onIncoming(remote)
        return local
    }

    /// Throws `.mediumUnavailable`: this medium is only an upgrade target.
    public func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        throw NearbyError(.mediumUnavailable, "the in-memory upgrade medium does not advertise")
    }

    /// Finishes at once: this medium is only an upgrade target.
    public func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        AsyncThrowingStream { $0.finish() }
    }

    /// Throws `.mediumUnavailable`: this medium connects only for upgrades.
    public func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        throw NearbyError(.mediumUnavailable, "the in-memory upgrade medium connects only for upgrades")
    }
}
