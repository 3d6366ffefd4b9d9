import NearbyWire

/// How to reach a discovered endpoint.
public enum EndpointRoute: Sendable, Hashable, CustomStringConvertible {
    /// A TCP listener at one of these hosts (IP address literals, tried in order) and this port.
    case tcp(hosts: [String], port: Int)
    /// A BLE peripheral at this address, with an L2CAP PSM when it advertised one.
    case ble(address: String, psm: UInt16?)

    /// A short description for logs.
    public var description: String {
        switch self {
        case .tcp(let hosts, let port): hosts.map { "\($0):\(port)" }.joined(separator: ",")
        case .ble(let address, let psm): psm.map { "\(address)/psm \($0)" } ?? address
        }
    }
}

/// An endpoint a medium found while discovering.
public struct DiscoveredEndpoint: Sendable, Hashable {
    /// The endpoint's 4-character ID.
    public var endpointID: String
    /// The endpoint info it advertises (≤ 131 bytes).
    public var endpointInfo: [UInt8]
    /// The medium it was found on.
    public var medium: MediumKind
    /// How to connect to it.
    public var route: EndpointRoute

    /// Creates a discovered endpoint.
    public init(endpointID: String, endpointInfo: [UInt8], medium: MediumKind, route: EndpointRoute) {
        self.endpointID = endpointID
        self.endpointInfo = endpointInfo
        self.medium = medium
        self.route = route
    }
}

/// A change in what a medium sees while discovering.
public enum DiscoveryEvent: Sendable, Hashable {
    /// An endpoint with the right service and strategy appeared (or its info changed).
    case found(DiscoveredEndpoint)
    /// An endpoint is no longer advertised.
    case lost(endpointID: String, medium: MediumKind)
}

/// What to advertise.
public struct AdvertisingRequest: Sendable, Hashable {
    /// The service ID both sides use.
    public var serviceID: String
    /// This side's endpoint ID.
    public var endpointID: String
    /// This side's endpoint info (≤ 131 bytes).
    public var endpointInfo: [UInt8]
    /// The strategy's PCP value.
    public var pcp: PCP
    /// A fixed port to listen on, or `nil` for one the system chooses (mediums that listen on ports only).
    public var port: Int?

    /// Creates a request.
    public init(serviceID: String, endpointID: String, endpointInfo: [UInt8], pcp: PCP, port: Int? = nil) {
        self.serviceID = serviceID
        self.endpointID = endpointID
        self.endpointInfo = endpointInfo
        self.pcp = pcp
        self.port = port
    }
}

/// A running advertisement and its listener.
public protocol AdvertisingSession: Sendable {
    /// The medium advertising.
    var medium: MediumKind { get }
    /// The listening port, for mediums that listen on one.
    var port: Int? { get }
    /// `nil` while peers can discover this advertisement; otherwise why they cannot (the listener still accepts
    /// connections by address).
    var discoverabilityProblem: NearbyError? { get }
    /// A medium-specific description of what is advertised, e.g. the DNS-SD service type.
    var advertisedName: String { get }
    /// Stops advertising and listening. Channels already accepted stay open. Idempotent.
    func stop() async
}

/// The code that drives one medium for the engine: advertises, discovers and opens channels over Wi-Fi LAN, BLE,
/// or an in-memory test medium.
///
/// Apps do not use drivers directly: they choose mediums by name (`Medium` in NearbyConnections) and the package
/// builds the drivers. Which medium a driver drives is its ``kind``.
public protocol MediumDriver: Sendable {
    /// Which medium this is.
    var kind: MediumKind { get }

    /// Starts listening and advertising. Every accepted channel is passed to `onIncoming`.
    /// - Throws: a `NearbyError` when the medium cannot listen at all.
    func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession

    /// Discovers endpoints advertising `serviceID` with the same `pcp`. The stream ends when cancelled; it
    /// finishes with an error when the medium becomes unusable.
    func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error>

    /// Opens a channel to a discovered endpoint.
    func connect(to route: EndpointRoute) async throws -> any EndpointChannel

    /// Opens a channel to a discovered endpoint of `serviceID`. Mediums whose channels name the service (BLE's
    /// socket layer introduces it) implement this; the default calls ``connect(to:)``.
    func connect(to route: EndpointRoute, serviceID: String) async throws -> any EndpointChannel

    /// Whether this medium can be the target of a bandwidth upgrade (§9.4): Wi-Fi LAN can, BLE cannot. The
    /// default is `false`.
    var supportsUpgradeListening: Bool { get }

    /// Bandwidth upgrade, offering side: listens for the peer's new channel of one upgrade. Every accepted channel
    /// is passed to `onIncoming`, still carrying the peer's plaintext CLIENT_INTRODUCTION.
    /// - Throws: a `NearbyError` (`.mediumUnavailable`) when the medium cannot be an upgrade target
    ///   now, e.g. Wi-Fi LAN without a usable address.
    func startUpgradeListener(
        onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any UpgradeListener

    /// Bandwidth upgrade, answering side: opens the new channel to the path the peer offered.
    func connectForUpgrade(to path: UpgradePathInfo) async throws -> any EndpointChannel
}
