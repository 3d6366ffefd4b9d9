import NearbyCore
import NearbyWire

/// One end of an in-memory, framed, bidirectional pipe. For engine unit tests only: the real mediums are
/// Wi-Fi LAN (TCP) and BLE.
public final class InMemoryChannel: EndpointChannel, @unchecked Sendable {
    public let medium: MediumKind
    public let peerDescription: String
    private let inbound: AsyncStream<[UInt8]>
    // Read by one task at a time (the session's reader), as EndpointChannel requires.
    private var iterator: AsyncStream<[UInt8]>.Iterator
    private let outbound: AsyncStream<[UInt8]>.Continuation
    private let ownInbound: AsyncStream<[UInt8]>.Continuation
    /// When set, writes are silently dropped (a peer that froze).
    public let isFrozen = LockedValue(false)
    /// When set, writes never complete until the channel is closed (a peer that stopped reading, or that grants
    /// no more BLE L2CAP credits); they then throw.
    public let stallsWrites = LockedValue(false)
    /// How many writes are stuck now because of ``stallsWrites``.
    public let stalledWrites = LockedValue(0)
    private let closedSignal = LockedValue<(closed: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(name: String, medium: MediumKind, inbound: AsyncStream<[UInt8]>, ownInbound: AsyncStream<[UInt8]>.Continuation,
         outbound: AsyncStream<[UInt8]>.Continuation) {
        peerDescription = name
        self.medium = medium
        self.inbound = inbound
        iterator = inbound.makeAsyncIterator()
        self.ownInbound = ownInbound
        self.outbound = outbound
    }

    /// A connected pair of channels that report `medium`.
    public static func pair(medium: MediumKind = .wifiLAN) -> (InMemoryChannel, InMemoryChannel) {
        let (a, aContinuation) = AsyncStream<[UInt8]>.makeStream()
        let (b, bContinuation) = AsyncStream<[UInt8]>.makeStream()
        return (
            InMemoryChannel(name: "memory-a", medium: medium, inbound: a, ownInbound: aContinuation, outbound: bContinuation),
            InMemoryChannel(name: "memory-b", medium: medium, inbound: b, ownInbound: bContinuation, outbound: aContinuation)
        )
    }

    public func readFrame() async throws -> [UInt8]? {
        await iterator.next()
    }

    public func writeFrame(_ body: [UInt8]) async throws {
        guard body.count <= LengthPrefixFraming.maxFrameLength else {
            throw NearbyError(.invalidFraming, "frame too large")
        }
        if isFrozen.withLock({ $0 }) { return }
        if stallsWrites.withLock({ $0 }) {
            stalledWrites.withLock { $0 += 1 }
            await withCheckedContinuation { waiter in
                let closed = closedSignal.withLock { state -> Bool in
                    if !state.closed { state.waiters.append(waiter) }
                    return state.closed
                }
                if closed { waiter.resume() }
            }
            stalledWrites.withLock { $0 -= 1 }
            throw NearbyError(.endpointIoError, "the in-memory channel closed under a stalled write")
        }
        if case .terminated = outbound.yield(body) {
            throw NearbyError(.endpointIoError, "the in-memory peer is gone")
        }
    }

    public func close() async {
        outbound.finish()
        ownInbound.finish()
        let waiters = closedSignal.withLock { state in
            state.closed = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// A medium whose "air" is a shared registry in this process. For engine unit tests only.
public final class InMemoryMedium: Medium {
    /// The shared registry several in-memory mediums advertise into and discover from.
    public final class Air: Sendable {
        struct Advertisement {
            var request: AdvertisingRequest
            var medium: MediumKind
            var onIncoming: @Sendable (any EndpointChannel) -> Void
        }
        let advertisements = LockedValue<[String: Advertisement]>([:])
        /// Upgrade listeners by port.
        public let upgradeListeners = LockedValue<[Int32: @Sendable (any EndpointChannel) -> Void]>([:])
        let watchers = LockedValue<[AsyncThrowingStream<DiscoveryEvent, any Error>.Continuation]>([])

        /// Creates empty air.
        public init() {}

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

    final class Session: AdvertisingSession {
        let medium: MediumKind
        let port: Int?
        let discoverabilityProblem: NearbyError? = nil
        let advertisedName = "in-memory"
        let air: Air
        init(air: Air, port: Int, medium: MediumKind) { self.air = air; self.port = port; self.medium = medium }
        func stop() async { air.withdraw(String(port!)) }
    }

    public let kind: MediumKind
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

    /// How many writes on the channels this medium opened are stuck now.
    public var stalledWriteCount: Int {
        opened.withLock { $0 }.reduce(0) { $0 + $1.stalledWrites.withLock { $0 } }
    }
    private static let nextPort = LockedValue(1)

    /// Creates a medium on `air` whose channels report `kind`.
    public init(air: Air, kind: MediumKind = .wifiLAN) {
        self.air = air
        self.kind = kind
    }

    public func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        let port = Self.nextPort.withLock { value in value += 1; return value }
        air.publish(String(port), .init(request: request, medium: kind, onIncoming: onIncoming))
        return Session(air: air, port: port, medium: kind)
    }

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

/// An in-memory bandwidth upgrade target that reports itself as Wi-Fi LAN: its listeners live on the air, its
/// paths are WIFI_LAN paths at 10.0.0.1 with the listener's port. For engine unit tests only.
public final class InMemoryUpgradeMedium: Medium {
    public let kind: MediumKind = .wifiLAN
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

    public func startUpgradeListener(
        onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any UpgradeListener {
        let port = Self.nextPort.withLock { value in value += 1; return value }
        air.upgradeListeners.withLock { $0[port] = onIncoming }
        return Listener(port: port, air: air)
    }

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

    public func startAdvertising(
        _ request: AdvertisingRequest, onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any AdvertisingSession {
        throw NearbyError(.mediumUnavailable, "the in-memory upgrade medium does not advertise")
    }

    public func discover(serviceID: String, pcp: PCP) -> AsyncThrowingStream<DiscoveryEvent, any Error> {
        AsyncThrowingStream { $0.finish() }
    }

    public func connect(to route: EndpointRoute) async throws -> any EndpointChannel {
        throw NearbyError(.mediumUnavailable, "the in-memory upgrade medium connects only for upgrades")
    }
}
