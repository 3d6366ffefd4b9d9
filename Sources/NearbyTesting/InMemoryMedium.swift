import NearbyCore
import NearbyWire

/// A medium whose "air" is a shared registry in this process, so apps and tests can run the whole engine (handshake,
/// encryption, payloads, keep-alive) without radios, Avahi or Bluetooth.
///
/// Managers whose mediums share one ``Air`` find and connect to each other:
///
/// ```swift
/// let air = InMemoryMedium.Air()
/// var options = ConnectionOptions()
/// options.useInMemoryMediums([InMemoryMedium(air: air)])
/// let manager = ConnectionManager(serviceID: "com.example.app", strategy: .pointToPoint, options: options)
/// ```
///
/// Discovery reports every advertisement on the air with the same service ID and strategy; connecting creates an
/// ``InMemoryChannel`` pair. Fault injection (``freezeOpenedChannels()``, ``stallOpenedChannelWrites()``) imitates
/// peers that stop responding.
public final class InMemoryMedium: MediumDriver {
    /// The shared registry several in-memory mediums advertise into and discover from.
    public final class Air: Sendable {
        struct Advertisement {
            var request: AdvertisingRequest
            var medium: MediumKind
            var onIncoming: @Sendable (any EndpointChannel) -> Void
        }
        let advertisements = LockedValue<[String: Advertisement]>([:])
        /// Upgrade listeners by port.
        package let upgradeListeners = LockedValue<[Int32: @Sendable (any EndpointChannel) -> Void]>([:])
        let watchers = LockedValue<[AsyncThrowingStream<DiscoveryEvent, any Error>.Continuation]>([])

        /// Creates empty air.
        public init() {}

        /// How many advertisements are on the air now.
        public var advertisementCount: Int { advertisements.withLock { $0.count } }

        func publish(_ key: String, _ advertisement: Advertisement) {
            advertisements.withLock { $0[key] = advertisement }
            let event = DiscoveryEvent.found(DiscoveredEndpoint(
                endpointID: advertisement.request.endpointID, endpointInfo: advertisement.request.endpointInfo,
                medium: advertisement.medium, route: .tcp(hosts: ["memory"], port: Int(key) ?? 0)))
            for watcher in watchers.withLock({ $0 }) { watcher.yield(event) }
        }

        func withdraw(_ key: String) {
            guard let removed = advertisements.withLock({ $0.removeValue(forKey: key) }) else { return }
            for watcher in watchers.withLock({ $0 }) {
                watcher.yield(.lost(endpointID: removed.request.endpointID, medium: removed.medium))
            }
        }
    }

    /// One advertisement on the air; stopping it withdraws it (discoverers see the endpoint lost).
    final class Session: AdvertisingSession {
        let medium: MediumKind
        let port: Int?
        let discoverabilityProblem: NearbyError? = nil
        let advertisedName = "in-memory"
        let air: Air
        init(air: Air, port: Int, medium: MediumKind) { self.air = air; self.port = port; self.medium = medium }
        func stop() async { air.withdraw(String(port!)) }
    }

    /// The medium this one says it is (channels report it too).
    public let kind: MediumKind
    /// The air this medium advertises into and discovers from.
    public let air: Air
    private let opened = LockedValue<[InMemoryChannel]>([])

    /// Makes every channel this medium opened drop its writes, like a peer that froze (SIGSTOP).
    public func freezeOpenedChannels() {
        for channel in opened.withLock({ $0 }) { channel.isFrozen.withLock { $0 = true } }
    }
    /// Makes every write on the channels this medium opened hang until the channel is closed, like a peer that
    /// stopped reading (TCP) or stopped granting credits (BLE L2CAP).
    public func stallOpenedChannelWrites() {
        for channel in opened.withLock({ $0 }) { channel.stallsWrites.withLock { $0 = true } }
    }

    /// Closes every channel this medium opened, as a link that breaks without a goodbye (Wi-Fi roaming, a peer
    /// out of range): both ends read the end of the stream after the frames already on their way.
    public func cutOpenedChannels() async {
        let channels = opened.withLock { channels -> [InMemoryChannel] in
            defer { channels = [] }
            return channels
        }
        for channel in channels { await channel.close() }
    }

    /// How many writes on the channels this medium opened are stuck now.
    public var stalledWriteCount: Int {
        opened.withLock { $0 }.reduce(0) { $0 + $1.stalledWrites.withLock { $0 } }
    }
    /// How many writes on the channels this medium opened got stuck so far (stuck now, or failed when closed).
    public var stalledWritesSoFar: Int {
        opened.withLock { $0 }.reduce(0) { $0 + $1.stalledWritesSoFar.withLock { $0 } }
    }
    private static let nextPort = LockedValue(1)

    /// Creates a medium on `air` whose channels report `kind`.
    public init(air: Air, kind: MediumKind = .wifiLAN) {
        self.air = air
        self.kind = kind
    }

    /// Publishes `request` on the air until the returned session is stopped.
    public func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        let port = Self.nextPort.withLock { value in value += 1; return value }
        air.publish(String(port), .init(request: request, medium: kind, onIncoming: onIncoming))
        return Session(air: air, port: port, medium: kind)
    }

    /// Reports advertisements on the air with this service ID and strategy, now and as they come and go.
    public func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        let (stream, continuation) = AsyncThrowingStream<DiscoveryEvent, any Error>.makeStream()
        air.watchers.withLock { $0.append(continuation) }
        for (port, advertisement) in air.advertisements.withLock({ $0 })
        where advertisement.request.serviceID == serviceID && advertisement.request.pcp == pcp {
            continuation.yield(.found(DiscoveredEndpoint(
                endpointID: advertisement.request.endpointID, endpointInfo: advertisement.request.endpointInfo,
                medium: advertisement.medium, route: .tcp(hosts: ["memory"], port: Int(port) ?? 0))))
        }
        return stream
    }

    /// Connects to the advertisement `route` names (its port on the air).
    /// - Throws: `NearbyError` `.endpointIoError` when nothing advertises there.
    public func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        guard case .tcp(_, let port) = route,
            let advertisement = air.advertisements.withLock({ $0[String(port)] })
        else {
            throw NearbyError(.endpointIoError, "nothing listens at \(route)")
        }
        let (local, remote) = InMemoryChannel.pair(medium: kind)
        opened.withLock { $0.append(local) }
        advertisement.onIncoming(remote)
        return local
    }
}

