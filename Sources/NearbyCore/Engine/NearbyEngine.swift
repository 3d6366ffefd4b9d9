import Foundation
import Logging
import NearbySecurity
import NearbyWire

/// The connection engine: advertising, discovery, connection requests, strategy rules and payloads over any set
/// of mediums. The public `ConnectionManager` API is a thin layer over it.
package actor NearbyEngine {
    /// The configuration.
    package nonisolated let configuration: EngineConfiguration
    /// This device's endpoint ID (4 characters), stable for the engine's lifetime.
    package nonisolated let localEndpointID: String
    /// Everything the engine reports, in order.
    ///
    /// The buffer is bounded: it holds up to ``ResourceLimits/maxBufferedEvents`` events not yet consumed; beyond
    /// that the oldest buffered events are dropped (the newest are kept, so a consumer that catches up sees the
    /// current state) and a warning is logged once per overflow. Consume it promptly.
    package nonisolated let events: AsyncStream<EngineEvent>

    private let mediums: [any MediumDriver]
    private let continuation: AsyncStream<EngineEvent>.Continuation
    private var advertising: [any AdvertisingSession] = []
    private var advertisedInfo: [UInt8] = []
    private var discoveryTasks: [ChildTask] = []
    private var discovered: [String: DiscoveredEndpoint] = [:]
    private var sessions: [ObjectIdentifier: EndpointSession] = [:]
    private var byEndpoint: [String: EndpointSession] = [:]
    /// Where and when each incoming session's channel was accepted (for ``PendingConnectionPolicy``).
    private var opened: [ObjectIdentifier: (source: String, since: Duration)] = [:]
    /// Outgoing requests whose channel is still being opened: the nonce each will carry. They count for the
    /// topology rules and the tie-break like a pending session; a tie-break lost meanwhile removes the entry.
    private var connecting: [String: Int32] = [:]
    private let rules: TopologyRules
    private let logger: Logger
    private let overflow: EventOverflowWarning
    /// The configuration's clock, wrapped once so that every session counts from the same start.
    private let clock: NearbyClock
    /// The bytes of BYTES payloads all endpoints may buffer (``ResourceLimits/maxBufferedBytes``).
    package nonisolated let bufferBudget: BufferedBytesBudget
    /// Owns every task the engine starts: sessions' run loops, accepted channels being set up, discoveries, and the
    /// supervisor that shuts the engine down once it is ``release()``d. ``shutdown()`` returns once they ended.
    package nonisolated let tasks = TaskScope()
    /// Signalled by ``release()``.
    private nonisolated let released = CompletionSignal()
    /// The background removal of a crashed run's partial files (NearbyEngine+StaleFiles.swift), a child of `tasks`.
    let staleFileCleanup: ChildTask?
    /// Signalled once that removal ended (or was cancelled).
    let staleFileCleanupEnded = CompletionSignal()
    /// Partial files a dead process of ours kept for senders that may come back (auto-resume across a restart).
    private let resumable: ResumableFiles

    /// Creates an engine over `mediums` (in priority order).
    package init(configuration: EngineConfiguration, mediums: [any MediumDriver], localEndpointID: String? = nil) {
        Self.live.withLock { $0 += 1 }
        self.configuration = configuration
        self.mediums = mediums
        clock = NearbyClock(any: configuration.clock)
        self.localEndpointID = localEndpointID ?? EndpointID.random().value
        rules = TopologyRules(strategy: configuration.strategy)
        bufferBudget = BufferedBytesBudget(limit: configuration.limits.maxBufferedBytes)
        (events, continuation) = AsyncStream.makeStream(
            bufferingPolicy: .bufferingNewest(max(1, configuration.limits.maxBufferedEvents)))
        var logger = configuration.logger
        logger[metadataKey: "service_id"] = "\(configuration.serviceID)"
        logger[metadataKey: "local_endpoint_id"] = "\(self.localEndpointID)"
        self.logger = logger
        let resumable = ResumableFiles(directory: configuration.receiveDirectory, kept: [])
        self.resumable = resumable
        staleFileCleanup = Self.startStaleFileCleanup(
            in: configuration.receiveDirectory, keepingFor: configuration.timeouts.autoReconnectWindow,
            into: resumable, clock: self.clock, logger: logger, scope: tasks, ended: staleFileCleanupEnded
        )
        overflow = EventOverflowWarning(logger: logger, what: "engine events", limit: configuration.limits.maxBufferedEvents)
        // The supervisor: once the owner lets go (`release()`, from a `ConnectionManager`'s deinit, which must not
        // start tasks), it shuts the engine down and closes the scope; it holds the engine until then.
        let released = self.released
        tasks.spawn { [self] in
            await released.wait()
            await shutdown()
            tasks.cancel()
        }
    }

    deinit {
        Self.live.withLock { $0 -= 1 }
    }

    /// Engines that exist now: a released engine goes away once its supervisor shut it down (tests check that
    /// nothing keeps one alive).
    package static var liveCount: Int { live.withLock { $0 } }
    private static let live = LockedValue(0)

    /// The owner is done with this engine (its `deinit` calls this; it starts nothing): the engine's supervisor
    /// task shuts everything down (``shutdown()``) and ends every task of the engine.
    package nonisolated func release() {
        released.signal()
    }

    // MARK: - Advertising

    /// Starts advertising `endpointInfo` on every medium (or those in `only`), and accepting connections.
    /// - Returns: the advertising sessions, one per medium that could listen.
    @discardableResult
    package func startAdvertising(endpointInfo: [UInt8], port: Int? = nil, only: Set<MediumKind>? = nil)
        async throws -> [any AdvertisingSession]
    {
        guard advertising.isEmpty else { throw NearbyError(.outOfOrderApiCall, "already advertising") }
        try Self.checkEndpointInfo(endpointInfo)
        advertisedInfo = endpointInfo
        let request = AdvertisingRequest(
            serviceID: configuration.serviceID, endpointID: localEndpointID, endpointInfo: endpointInfo,
            pcp: configuration.strategy.pcp, port: port)
        var failures: [any Error] = []
        for medium in selected(only) {
            do {
                let session = try await medium.startAdvertising(request) { [weak self, tasks] channel in
                    let taken = tasks.spawn { [weak self] in
                        guard let self else {
                            await channel.close()
                            return
                        }
                        await self.accept(channel)
                    }
                    // The engine is shut down: nothing takes the channel. Owner: none is needed; it ends once the
                    // channel is closed.
                    if !taken { Task { await channel.close() } }
                }
                advertising.append(session)
                logger.info("advertising", metadata: ["medium": "\(medium.kind)", "name": "\(session.advertisedName)"])
            } catch {
                failures.append(error)
                logger.error("cannot advertise", metadata: ["medium": "\(medium.kind)", "error": "\(error)"])
            }
        }
        if advertising.isEmpty {
            throw (failures.first as? NearbyError) ?? NearbyError(.mediumUnavailable, "no medium can advertise")
        }
        return advertising
    }

    /// Stops advertising; connections stay up.
    package func stopAdvertising() async {
        let sessions = advertising
        advertising = []
        for session in sessions { await session.stop() }
    }

    // MARK: - Discovery

    /// Starts discovering endpoints of the same service and strategy on every medium (or those in `only`).
    package func startDiscovery(only: Set<MediumKind>? = nil) throws {
        guard discoveryTasks.isEmpty else { throw NearbyError(.outOfOrderApiCall, "already discovering") }
        for medium in selected(only) {
            let stream = medium.discover(serviceID: configuration.serviceID, pcp: configuration.strategy.pcp)
            let kind = medium.kind
            let discovering = tasks.spawnCancellable { [weak self] in
                do {
                    for try await event in stream {
                        await self?.discovery(event)
                    }
                } catch {
                    let nearby = (error as? NearbyError) ?? NearbyError(.mediumUnavailable, "discovery failed", cause: error)
                    await self?.emit(.discoveryFailed(kind, nearby))
                }
            }
            if let discovering { discoveryTasks.append(discovering) }
        }
    }

    /// Stops discovering.
    package func stopDiscovery() {
        for task in discoveryTasks { task.cancel() }
        discoveryTasks = []
    }

    /// The endpoints currently discovered.
    package var discoveredEndpoints: [DiscoveredEndpoint] { Array(discovered.values) }

    private func discovery(_ event: DiscoveryEvent) {
        switch event {
        case .found(let endpoint):
            guard endpoint.endpointID != localEndpointID else { return }
            let known = discovered[endpoint.endpointID]
            discovered[endpoint.endpointID] = endpoint
            if known?.endpointInfo != endpoint.endpointInfo || known == nil {
                emit(.endpointFound(endpoint))
            }
        case .lost(let endpointID, _):
            if discovered.removeValue(forKey: endpointID) != nil {
                emit(.endpointLost(endpointID: endpointID))
            }
        }
    }

    // MARK: - Connections

    /// Requests a connection to a discovered endpoint, introducing ourselves with `endpointInfo`.
    package func requestConnection(to endpointID: String, endpointInfo: [UInt8]) async throws {
        guard let endpoint = discovered[endpointID] else {
            throw NearbyError(.endpointUnknown, "endpoint \(endpointID) has not been discovered")
        }
        try await requestConnection(route: endpoint.route, medium: endpoint.medium, peerEndpointID: endpointID,
                                    peerEndpointInfo: endpoint.endpointInfo, endpointInfo: endpointInfo)
    }

    /// Requests a connection over a known route (for example `host:port` without discovery). The peer's endpoint
    /// ID is not part of the protocol's reply, so a route without discovery gets `peerEndpointID` or a local alias.
    @discardableResult
    package func requestConnection(
        route: EndpointRoute, medium kind: MediumKind, peerEndpointID: String? = nil, peerEndpointInfo: [UInt8] = [],
        endpointInfo: [UInt8]
    ) async throws -> String {
        try Self.checkEndpointInfo(endpointInfo)
        let alias = peerEndpointID ?? EndpointID.random().value
        try checkStrategyAllowsOutgoing(to: alias)
        guard let medium = mediums.first(where: { $0.kind == kind }) else {
            throw NearbyError(.mediumUnavailable, "medium \(kind) is not available")
        }
        let nonce = Int32.random(in: .min ... .max)
        connecting[alias] = nonce
        let channel: any EndpointChannel
        do {
            channel = try await medium.connect(to: route, serviceID: configuration.serviceID)
        } catch {
            if connecting[alias] == nonce { connecting[alias] = nil }
            throw error
        }
        guard connecting[alias] == nonce else {
            await channel.close()
            throw NearbyError(
                .endpointIoError, "\(alias) requested a connection to us at the same moment; the tie-break dropped ours")
        }
        connecting[alias] = nil
        let machine = ConnectionStateMachine.outgoing(
            local: localDescription(endpointInfo), medium: kind, peerEndpointID: alias, peerEndpointInfo: peerEndpointInfo,
            nonce: nonce)
        let route = route
        let session = makeSession(
            channel: channel, machine: machine, keepAlive: configuration.keepAlive,
            reconnectChannel: { [weak self] in
                guard let self else { throw NearbyError(.endpointIoError, "the engine is gone") }
                return try await self.reopen(route: route, medium: kind, endpointID: alias)
            })
        // Registered before the next suspension, so a request from the same endpoint meanwhile meets the tie-break.
        register(session, endpointID: alias)
        await session.setPeerEndpointID(alias)
        start(session)
        return alias
    }

    /// Accepts the pending connection with `endpointID`.
    package func acceptConnection(_ endpointID: String) async throws {
        try await session(endpointID).decide(accept: true)
    }

    /// Rejects the pending connection with `endpointID`.
    package func rejectConnection(_ endpointID: String) async throws {
        try await session(endpointID).decide(accept: false)
    }

    /// Disconnects from `endpointID`.
    package func disconnect(from endpointID: String) async {
        await byEndpoint[endpointID]?.disconnect()
    }

    /// Sends a payload to a connected endpoint.
    package func send(_ source: OutgoingPayloadSource, to endpointID: String, id: PayloadID = .unique()) async throws {
        try await session(endpointID).send(source, id: id)
    }

    /// Cancels a payload in either direction, on every connection that carries it (a payload sent to several
    /// endpoints has one ID).
    @discardableResult
    package func cancelPayload(_ id: PayloadID) async -> Bool {
        var found = false
        for session in sessions.values where await session.cancel(id) {
            found = true
        }
        return found
    }

    /// The endpoints currently connected.
    package func connectedEndpoints() async -> [String] {
        var result: [String] = []
        for (id, session) in byEndpoint where await session.isConnected {
            result.append(id)
        }
        return result.sorted()
    }

    /// How many sessions are open (pending, connected, or ending but not yet closed); tests check that none leak.
    package var openSessionCount: Int { sessions.count }

    /// Stops everything: advertising, discovery and every connection. Connections are closed in parallel, each
    /// within ``EndpointSession/disconnectReturnBound``, so peers that stopped reading cannot hold it up. Returns
    /// once the sessions' run loops have ended too (the engine can be used again afterwards).
    package func shutdown() async {
        staleFileCleanup?.cancel()
        await staleFileCleanupEnded.wait()
        stopDiscovery()
        await stopAdvertising()
        let all = Array(sessions.values)
        await withTaskGroup(of: Void.self) { group in
            for session in all { group.addTask { await session.disconnect() } }
        }
        for session in all { await session.runEnded() }
    }

    // MARK: - Internals

    private func accept(_ channel: any EndpointChannel) {
        let decision = PendingConnectionPolicy.decide(
            source: channel.peerSource, open: openConnections(), limits: configuration.limits)
        var evicted: EndpointSession?
        switch decision {
        case .refuse(let refusal):
            logger.notice("refusing an incoming connection", metadata: [
                "medium": "\(channel.medium)", "peer": "\(channel.peerDescription)", "reason": "\(refusal)"])
            tasks.spawn { await channel.close() }
            return
        case .admitEvicting(let id):
            evicted = sessions.removeValue(forKey: id)
            opened[id] = nil
        case .admit:
            break
        }
        let machine = ConnectionStateMachine.incoming(local: localDescription(advertisedInfo), medium: channel.medium)
        let session = makeSession(channel: channel, machine: machine, keepAlive: configuration.keepAlive)
        sessions[ObjectIdentifier(session)] = session
        opened[ObjectIdentifier(session)] = (channel.peerSource, clock.now)
        start(session)
        if let evicted {
            logger.notice("the table of pending connections is full: ending the one that waited longest", metadata: [
                "peer": "\(channel.peerDescription)"])
            tasks.spawn {
                await evicted.end(NearbyError(
                    .limitExceeded,
                    "too many connections were pending: this one, from the busiest peer address, waited longest"))
            }
        }
    }

    /// Runs `session` in a task of the engine's scope.
    private func start(_ session: EndpointSession) {
        let started = tasks.spawn { await session.run() }
        if !started {
            // The engine is shut down for good: forget the session and close its channel instead of running it.
            // Owner: none is needed; it ends once the channel is closed (within the disconnect bound).
            sessions[ObjectIdentifier(session)] = nil
            Task { await session.disconnect() }
        }
    }

    /// Every open session as ``PendingConnectionPolicy`` sees it.
    private func openConnections() -> [PendingConnectionPolicy.Connection<ObjectIdentifier>] {
        sessions.map { id, session in
            let origin = opened[id]
            return PendingConnectionPolicy.Connection(
                id: id, source: origin?.source ?? "", isIncoming: !session.isOutgoing,
                isPending: !session.reachedConnected.withLock { $0 }, since: origin?.since ?? .zero)
        }
    }

    private func makeSession(
        channel: any EndpointChannel, machine: ConnectionStateMachine, keepAlive: KeepAliveSettings,
        reconnectChannel: (@Sendable () async throws -> any EndpointChannel)? = nil
    ) -> EndpointSession {
        EndpointSession(
            channel: channel, machine: machine, keepAlive: keepAlive,
            receiveDirectory: configuration.receiveDirectory, timeouts: configuration.timeouts,
            limits: configuration.limits, bufferBudget: bufferBudget, logger: logger,
            incomingFileNaming: configuration.incomingFileNaming,
            admission: { [weak self] session, endpointID, nonce in
                await self?.admit(session, endpointID: endpointID, nonce: nonce) ?? false
            },
            upgradeMediums: mediums.filter(\.supportsUpgradeListening),
            autoUpgrade: configuration.autoUpgradeBandwidth, localEndpointID: localEndpointID, clock: clock,
            reconnectChannel: reconnectChannel,
            reconnectTarget: { [weak self] endpointID in await self?.reconnectTarget(endpointID) },
            resumable: resumable,
            onEvent: { [continuation, overflow] event in
                // Yielded synchronously so events keep the order the session reports them in.
                overflow.check(continuation.yield(.endpoint(event)))
            },
            onEnd: { [weak self, tasks] session in
                tasks.spawn { [weak self] in await self?.remove(session) }
            })
    }

    /// Auto-reconnect, the side that connected: a new channel to `endpointID`, where discovery sees it now, or
    /// over the route of the first connection.
    private func reopen(route: EndpointRoute, medium kind: MediumKind, endpointID: String) async throws
        -> any EndpointChannel
    {
        let (target, medium) = discovered[endpointID].map { ($0.route, $0.medium) } ?? (route, kind)
        guard let driver = mediums.first(where: { $0.kind == medium }) else {
            throw NearbyError(.mediumUnavailable, "medium \(medium) is not available")
        }
        return try await driver.connect(to: target)
    }

    /// Auto-reconnect, the side that was connected to: the session a channel introducing `endpointID` is for.
    private func reconnectTarget(_ endpointID: String) -> EndpointSession? {
        guard let session = byEndpoint[endpointID], !session.hasEnded.withLock({ $0 }) else { return nil }
        return session
    }

    private func register(_ session: EndpointSession, endpointID: String) {
        sessions[ObjectIdentifier(session)] = session
        byEndpoint[endpointID] = session
    }

    private func remove(_ session: EndpointSession) async {
        sessions[ObjectIdentifier(session)] = nil
        opened[ObjectIdentifier(session)] = nil
        if let id = await session.endpointID, byEndpoint[id] === session {
            byEndpoint[id] = nil
        }
    }

    /// Decides whether an incoming request may go on: duplicates, the nonce tie-break and the strategy's
    /// topology (``TopologyRules``). The decision and its bookkeeping happen without suspending, so two requests
    /// arriving together cannot both pass a rule meant for one.
    private func admit(_ session: EndpointSession, endpointID: String, nonce: Int32) async -> Bool {
        let decision = rules.incoming(from: endpointID, nonce: nonce, links: links(excluding: session))
        let ours = byEndpoint[endpointID].flatMap { $0 === session ? nil : $0 }
        switch decision {
        case .admit:
            byEndpoint[endpointID] = session
            return true
        case .admitDroppingOurs:
            logger.info("tie-break: their request goes on, ours is dropped", metadata: ["endpoint_id": "\(endpointID)"])
            connecting[endpointID] = nil
            byEndpoint[endpointID] = session
            await ours?.end(NearbyError(
                .endpointIoError, "\(endpointID) requested a connection to us at the same moment and won the tie-break"))
            return true
        case .refuseDroppingOurs(let refusal):
            logger.info("tie-break: both requests dropped", metadata: ["endpoint_id": "\(endpointID)", "reason": "\(refusal)"])
            connecting[endpointID] = nil
            if let ours {
                byEndpoint[endpointID] = nil
                await ours.end(NearbyError(.endpointIoError, "simultaneous requests with \(endpointID): \(refusal)"))
            }
            return false
        case .refuse(let refusal):
            logger.info("refusing an incoming request", metadata: [
                "endpoint_id": "\(endpointID)", "strategy": "\(configuration.strategy)", "reason": "\(refusal)"])
            return false
        }
    }

    /// Throws the error Google gives when the strategy forbids a request to `endpointID` now (or one exists).
    private func checkStrategyAllowsOutgoing(to endpointID: String) throws(NearbyError) {
        if case .refuse(let code, let reason) = rules.outgoing(to: endpointID, links: links()) {
            throw NearbyError(code, reason)
        }
    }

    /// The connections the topology rules count: outgoing requests still opening their channel, and every
    /// session registered under an endpoint ID that has not ended.
    private func links(excluding excluded: EndpointSession? = nil) -> [TopologyRules.Link] {
        var result = connecting.map { TopologyRules.Link(endpointID: $0.key, direction: .outgoing, nonce: $0.value) }
        for (id, session) in byEndpoint where session !== excluded && !session.hasEnded.withLock({ $0 }) {
            result.append(TopologyRules.Link(
                endpointID: id, direction: session.isOutgoing ? .outgoing : .incoming,
                isConnected: session.reachedConnected.withLock { $0 }, nonce: session.requestNonce))
        }
        return result
    }

    private func session(_ endpointID: String) throws -> EndpointSession {
        guard let session = byEndpoint[endpointID] else {
            throw NearbyError(.endpointUnknown, "no connection with \(endpointID)")
        }
        return session
    }

    private func localDescription(_ info: [UInt8]) -> ConnectionStateMachine.LocalEndpoint {
        // Every medium we have, in priority order, as peers list theirs.
        .init(endpointID: localEndpointID, endpointInfo: info, upgradeMediums: mediums.map(\.kind),
              keepAlive: configuration.keepAlive,
              features: configuration.timeouts.autoReconnectWindow > .zero ? .all : [.payloadAcks],
              osType: configuration.reportedOSType)
    }

    private func selected(_ only: Set<MediumKind>?) -> [any MediumDriver] {
        mediums.filter { only?.contains($0.kind) ?? true }
    }

    func emit(_ event: EngineEvent) {
        overflow.check(continuation.yield(event))
    }

    /// Endpoint info must be 1…131 bytes.
    static func checkEndpointInfo(_ info: [UInt8]) throws(NearbyError) {
        guard info.count <= 131 else {
            throw NearbyError(.invalidArgument, "endpoint info is \(info.count) bytes; at most 131 are allowed")
        }
        guard !info.isEmpty else {
            throw NearbyError(.invalidArgument, "endpoint info must not be empty")
        }
    }
}
