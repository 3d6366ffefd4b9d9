import Logging
import NearbyCore
import NearbyWiFiLAN
import NearbyWire

/// The Android app's side in ``AndroidBLEPeerTests``: a medium of kind `ble` whose channels are TCP connections to
/// and from `Tests/BLE/android_peer.py`, which relays them to its BLE socket. So the app's engine believes it is on
/// BLE (as the phone's would), lists BLE and Wi-Fi LAN in its requests, and offers or accepts the upgrade to Wi-Fi
/// LAN like any BLE connection.
final class RelayedAppMedium: MediumDriver {
    let kind: MediumKind = .ble
    private let logger: Logger
    /// The endpoint `discover` reports: the relay's TCP port (set by the test once the peer printed it).
    let target = LockedValue<(endpointID: String, info: [UInt8], port: Int)?>(nil)

    init(logger: Logger) {
        self.logger = logger
    }

    func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        let listener = try await TCPListener.bind(host: "127.0.0.1", port: 0, medium: .ble, logger: logger) { onIncoming($0) }
        return RelaySession(listener: listener)
    }

    func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: DiscoveryEvent.self, throwing: (any Error).self)
        if let target = target.withLock({ $0 }) {
            continuation.yield(.found(DiscoveredEndpoint(
                endpointID: target.endpointID, endpointInfo: target.info, medium: .ble,
                route: .tcp(hosts: ["127.0.0.1"], port: target.port))))
        }
        return stream
    }

    func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        guard case .tcp(let hosts, let port) = route else { throw NearbyError(.invalidArgument, "not a relay route") }
        return try await TCPConnector.connect(hosts: hosts, port: port, medium: .ble, logger: logger)
    }
}

/// The relay's listener as an advertising session.
struct RelaySession: AdvertisingSession {
    let listener: TCPListener
    var medium: MediumKind { .ble }
    var port: Int? { listener.port }
    var discoverabilityProblem: NearbyError? { nil }
    var advertisedName: String { "relay on 127.0.0.1:\(listener.port)" }
    func stop() async { await listener.stop() }
}
