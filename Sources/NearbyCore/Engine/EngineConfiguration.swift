import Foundation
import Logging
import NearbyWire

/// How endpoints may connect to each other. Endpoints find only endpoints of the same strategy, and the engine
/// refuses connections the strategy does not allow, as Google's do (a refused request of our own throws
/// `outOfOrderApiCall`; a refused incoming request has its channel closed before the handshake).
public enum Strategy: String, Sendable, Hashable, CaseIterable {
    /// Any endpoint may connect to any other (M-to-N).
    case cluster
    /// One hub advertises and many spokes connect to it (1-to-N): the hub takes any number of incoming
    /// connections and requests none while it has them; a spoke holds one connection.
    case star
    /// Exactly one connection at a time (1-to-1), pending or connected, in either direction.
    case pointToPoint = "point-to-point"

    /// The strategy's value on the wire.
    public var pcp: PCP {
        switch self {
        case .cluster: .p2pCluster
        case .star: .p2pStar
        case .pointToPoint: .p2pPointToPoint
        }
    }
}

/// Everything a `NearbyEngine` needs to know up front.
public struct EngineConfiguration: Sendable {
    /// The service ID; only endpoints with the same service ID see each other.
    public var serviceID: String
    /// The connection strategy.
    public var strategy: Strategy
    /// Where received files are written.
    public var receiveDirectory: URL
    /// Keep-alive timing asked of peers.
    public var keepAlive: KeepAliveSettings
    /// Connection phase timeouts.
    public var timeouts: EndpointSession.Timeouts
    /// Whether the advertiser side moves a connection to a faster medium once connected (bandwidth upgrade, e.g.
    /// BLE to Wi-Fi LAN) when both sides have it. Offers from a peer are taken either way.
    public var autoUpgradeBandwidth: Bool
    /// Limits on what peers can make this engine hold (bytes, payloads, endpoints, time).
    public var limits: ResourceLimits
    /// The logger; set its level to `.debug` for the debug log.
    public var logger: Logger
    /// The clock every timer of the engine sleeps on (keep-alive, deadlines, upgrade retries, drains): the
    /// system's `ContinuousClock` by default; tests pass a `ManualClock` from the `NearbyTesting` product.
    public var clock: any Clock<Duration>
    /// The `os_info` type of our CONNECTION_RESPONSE frames (nil: left out). Quick Share peers read it.
    package var reportedOSType: ProtoOsInfo.OsType?
    /// Names incoming FILE payloads instead of the name and folder in their payload header: given the peer's
    /// endpoint ID, the payload ID and the header's name and folder, it returns the name and folder to use (still
    /// sanitized by the engine), or nil to refuse the payload (it fails with a PAYLOAD_ERROR to the peer and
    /// nothing is written). Applications such as Quick Share announce names in their own frames.
    package var incomingFileNaming: IncomingFileNaming?

    /// Creates a configuration.
    public init(
        serviceID: String, strategy: Strategy = .pointToPoint,
        receiveDirectory: URL = URL(fileURLWithPath: FileManager.default.currentDirectoryPath),
        keepAlive: KeepAliveSettings = .default, timeouts: EndpointSession.Timeouts = .init(),
        autoUpgradeBandwidth: Bool = true, limits: ResourceLimits = .init(), logger: Logger = Logger(label: "nearby"),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.clock = clock
        self.serviceID = serviceID
        self.strategy = strategy
        self.receiveDirectory = receiveDirectory
        self.keepAlive = keepAlive
        self.timeouts = timeouts
        self.autoUpgradeBandwidth = autoUpgradeBandwidth
        self.limits = limits
        self.logger = logger
    }
}

/// How an application names incoming FILE payloads (see `EngineConfiguration.incomingFileNaming`).
package typealias IncomingFileNaming = @Sendable (
    _ endpointID: String, _ payloadID: PayloadID, _ fileName: String, _ parentFolder: String
) -> (fileName: String, parentFolder: String)?

/// Something the engine reports.
public enum EngineEvent: Sendable {
    /// Discovery found an endpoint.
    case endpointFound(DiscoveredEndpoint)
    /// Discovery lost an endpoint.
    case endpointLost(endpointID: String)
    /// Discovery on a medium stopped with an error.
    case discoveryFailed(MediumKind, NearbyError)
    /// Something happened on an endpoint.
    case endpoint(EndpointEvent)
}
