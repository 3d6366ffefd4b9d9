import Foundation
import Logging
import NearbyCore
import NearbyWire

/// The entry point of swift-nearby: one per service ID and strategy. ``Advertiser`` and ``Discoverer`` work
/// through it.
///
/// Two surfaces, use either or both:
/// - **async/await**: iterate ``events``; accept or reject with ``accept(_:)`` / ``reject(_:)``; send with the
///   `async` methods.
/// - **delegates** (Google's shape): set ``delegate``, ``Advertiser/delegate`` and ``Discoverer/delegate``; they are
///   called on ``queue``. When a delegate is set, it makes the accept/reject decisions.
public final class ConnectionManager: Sendable {
    /// The service ID; only endpoints with the same service ID see each other.
    public let serviceID: String
    /// The strategy.
    public let strategy: Strategy
    /// The queue delegate methods are called on.
    public let queue: DispatchQueue
    /// A new subscription to every event from now on, in order (discovery, connections, payloads). Each access
    /// returns its own stream, so several tasks can listen at once; subscribe before starting discovery or
    /// advertising so nothing is missed.
    ///
    /// Each subscription buffers up to `ResourceLimits.maxBufferedEvents` (``ConnectionOptions/limits``) events
    /// its consumer has not taken yet. A consumer that falls further behind loses the oldest buffered events (the
    /// newest are kept) and a warning is logged once per overflow; nothing else waits for a slow consumer, so
    /// iterate promptly, and stop iterating (or drop the stream) when no longer interested.
    public var events: AsyncStream<ConnectionEvent> {
        let limit = options.limits.maxBufferedEvents
        let (stream, continuation) = AsyncStream<ConnectionEvent>.makeStream(
            bufferingPolicy: .bufferingNewest(max(1, limit)))
        let key = UUID()
        let warning = EventOverflowWarning(logger: options.logger, what: "connection events", limit: limit)
        subscribers.withLock { $0[key] = Subscriber(continuation: continuation, overflow: warning) }
        continuation.onTermination = { [subscribers] _ in
            _ = subscribers.withLock { $0.removeValue(forKey: key) }
        }
        return stream
    }
    /// This device's endpoint ID for this manager's lifetime.
    public var localEndpointID: EndpointID { engine.localEndpointID }

    let engine: NearbyEngine
    let options: ConnectionOptions
    /// Why mediums in ``ConnectionOptions/mediums`` could not be made (BLE without a controller).
    let mediumProblems: [MediumKind: NearbyError]
    /// Advertising and discovery starts and stops, in call order.
    let operations = OrderedOperations()
    /// The BLE radio's state for ``bluetoothStatusHandler`` (ConnectionManager+Bluetooth.swift).
    let bluetooth: BluetoothStatusWatch
    private let subscribers = LockedValue<[UUID: Subscriber]>([:])

    struct Subscriber {
        let continuation: AsyncStream<ConnectionEvent>.Continuation
        let overflow: EventOverflowWarning
    }
    private let state = LockedValue(DelegateState())
    /// Owns the manager's tasks: the event router, the Bluetooth status followers and the work of the
    /// callback-shaped API; `deinit` cancels them (it starts nothing), and ``shutdown()`` waits for the engine's.
    let tasks = TaskScope()

    struct DelegateState {
        weak var delegate: (any ConnectionManagerDelegate)?
        weak var advertiser: Advertiser?
        weak var discoverer: Discoverer?
    }

    /// The delegate for connections and payloads.
    public var delegate: (any ConnectionManagerDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// Creates a manager.
    public init(
        serviceID: String, strategy: Strategy, queue: DispatchQueue = DispatchQueue(label: "swift-nearby.delegate"),
        options: ConnectionOptions = ConnectionOptions()
    ) {
        self.serviceID = serviceID
        self.strategy = strategy
        self.queue = queue
        self.options = options
        var timeouts = EndpointSession.Timeouts()
        timeouts.upgradeDelay = options.bandwidthUpgradeDelay
        timeouts.autoReconnectWindow = options.autoReconnectWindow
        let (drivers, problems) = options.makeDrivers()
        for (kind, problem) in problems {
            options.logger.warning("medium unavailable", metadata: ["medium": "\(kind)", "error": "\(problem)"])
        }
        mediumProblems = problems
        bluetooth = BluetoothStatusWatch(drivers: drivers, tasks: tasks)
        var configuration = EngineConfiguration(
            serviceID: serviceID, strategy: strategy, receiveDirectory: options.receiveDirectory,
            keepAlive: options.keepAlive, timeouts: timeouts, autoUpgradeBandwidth: options.autoUpgradeBandwidth,
            limits: options.limits, logger: options.logger)
        configuration.reportedOSType = options.reportedOSType
        configuration.incomingFileNaming = options.incomingFileNaming
        engine = NearbyEngine(configuration: configuration, mediums: drivers)
        let engine = self.engine
        tasks.spawn { [weak self] in
            for await event in engine.events {
                guard let self else { return }
                self.route(event)
            }
        }
    }

    deinit {
        tasks.cancel()
        operations.finish()
        for subscriber in subscribers.withLock({ Array($0.values) }) { subscriber.continuation.finish() }
        // The engine's own supervisor shuts it down (advertising, discovery, connections): nothing is started here.
        engine.release()
    }

    /// The engine's kinds for the mediums asked for (`nil`: every medium of the options).
    /// - Throws: why none of the implemented mediums asked for can be used (BLE without a controller).
    func engineKinds(_ mediums: Set<Medium>?) throws -> Set<MediumKind>? {
        let kinds = mediums.map { Set($0.compactMap(\.kind)) }
        let asked = kinds ?? Set(options.mediums.compactMap(\.kind))
        let problems = asked.sorted { $0.rawValue < $1.rawValue }.compactMap { mediumProblems[$0] }
        if let first = problems.first, problems.count == asked.count { throw first }
        return kinds
    }

    /// Google's callback form of a start: checks `mediums` now, runs `start` after earlier starts and stops of this
    /// manager, and gives `completionHandler` `nil` once it has run, or the error.
    func enqueueStart(
        mediums: Set<Medium>?, completionHandler: (@Sendable ((any Error)?) -> Void)?,
        _ start: @escaping @Sendable (NearbyEngine, Set<MediumKind>?) async throws -> Void
    ) {
        let kinds: Set<MediumKind>?
        do {
            kinds = try engineKinds(mediums)
        } catch {
            completionHandler?(error)
            return
        }
        let engine = self.engine
        operations.enqueue {
            do {
                try await start(engine, kinds)
                completionHandler?(nil)
            } catch {
                completionHandler?(error)
            }
        }
    }

    func attach(advertiser: Advertiser) { state.withLock { $0.advertiser = advertiser } }
    func attach(discoverer: Discoverer) { state.withLock { $0.discoverer = discoverer } }

    // MARK: - Decisions

    /// Accepts the pending connection with `endpointID`.
    public func accept(_ endpointID: EndpointID) async throws {
        try await engine.acceptConnection(endpointID)
    }

    /// Rejects the pending connection with `endpointID`.
    public func reject(_ endpointID: EndpointID) async throws {
        try await engine.rejectConnection(endpointID)
    }

    // MARK: - Payloads (async)

    /// Sends bytes (at most 1,047,552) to a connected endpoint; returns when the transfer has started.
    @discardableResult
    public func send(_ data: Data, to endpointID: EndpointID, id: PayloadID = .unique()) async throws -> PayloadID {
        try await engine.send(.bytes(Array(data)), to: endpointID, id: id)
        return id
    }

    /// Sends a file; the peer sees `name` (a last path component, optionally after folders: `photos/a.jpg`).
    @discardableResult
    public func sendResource(at url: URL, withName name: String, to endpointID: EndpointID, id: PayloadID = .unique())
        async throws -> PayloadID
    {
        let (fileName, folder) = Self.split(name)
        try await engine.send(.file(url, name: fileName, parentFolder: folder), to: endpointID, id: id)
        return id
    }

    /// Sends a stream of unknown length: `next` returns the next bytes, `nil` at the end.
    @discardableResult
    public func sendStream(
        to endpointID: EndpointID, id: PayloadID = .unique(), next: @escaping @Sendable () async throws -> [UInt8]?
    ) async throws -> PayloadID {
        try await engine.send(.stream(next: next), to: endpointID, id: id)
        return id
    }

    /// Cancels a payload in either direction.
    public func cancel(_ payloadID: PayloadID) async {
        await engine.cancelPayload(payloadID)
    }

    /// Disconnects from an endpoint.
    public func disconnect(from endpointID: EndpointID) async {
        await engine.disconnect(from: endpointID)
    }

    /// Stops advertising, discovery and every connection, and returns once they have stopped (each connection
    /// within 3 seconds, however its peer behaves). The manager can be used again afterwards.
    public func shutdown() async {
        await engine.shutdown()
    }

    /// Connects by address (`host:port`) without discovery. The peer's endpoint ID is not part of the
    /// protocol's replies, so the returned ID is a local alias for this connection.
    public func requestConnection(toAddress host: String, port: Int, using context: Data) async throws -> EndpointID {
        try await engine.requestConnection(
            route: .tcp(hosts: [host], port: port), medium: .wifiLAN, endpointInfo: Array(context))
    }

    static func split(_ name: String) -> (fileName: String, folder: String) {
        let parts = name.split(separator: "/", omittingEmptySubsequences: true)
        guard let last = parts.last else { return (name, "") }
        return (String(last), parts.dropLast().joined(separator: "/"))
    }

    // MARK: - Routing

    private func route(_ event: EngineEvent) {
        let delegates = state.withLock { $0 }
        switch event {
        case .endpointFound(let endpoint):
            broadcast(.endpointFound(endpoint.endpointID, context: Data(endpoint.endpointInfo), medium: endpoint.medium))
            if let discoverer = delegates.discoverer {
                queue.async { discoverer.delegate?.discoverer(discoverer, didFind: endpoint.endpointID, with: Data(endpoint.endpointInfo)) }
            }
        case .endpointLost(let endpointID):
            broadcast(.endpointLost(endpointID))
            if let discoverer = delegates.discoverer {
                queue.async { discoverer.delegate?.discoverer(discoverer, didLose: endpointID) }
            }
        case .discoveryFailed(let medium, let error):
            broadcast(.discoveryFailed(medium, error))
        case .endpoint(let endpointEvent):
            routeEndpoint(endpointEvent, delegates)
        }
    }

    private func routeEndpoint(_ event: EndpointEvent, _ delegates: DelegateState) {
        let delegate = delegates.delegate
        switch event {
        case .initiated(let info):
            let code = VerificationCode(digits: info.verificationDigits, token: info.verificationToken)
            broadcast(.connectionRequested(
                info.endpointID, context: Data(info.endpointInfo), code: code, isIncoming: info.isIncoming))
            decideThroughDelegates(info, delegates)
        case .connected(let info):
            broadcast(.stateChanged(info.endpointID, .connected, error: nil))
            notify(delegate) { $0.connectionManager(self, didChangeTo: .connected, for: info.endpointID) }
        case .mediumChanged(let endpointID, let medium):
            broadcast(.mediumChanged(endpointID, medium: medium))
        case .reconnecting(let endpointID, let error):
            broadcast(.reconnecting(endpointID, error: error))
        case .reconnected(let endpointID, let medium):
            broadcast(.reconnected(endpointID, medium: medium))
        case .rejected(let endpointID, _):
            broadcast(.stateChanged(endpointID, .rejected, error: nil))
            notify(delegate) { $0.connectionManager(self, didChangeTo: .rejected, for: endpointID) }
        case .disconnected(let endpointID, let error):
            broadcast(.stateChanged(endpointID, .disconnected, error: error))
            notify(delegate) { $0.connectionManager(self, didChangeTo: .disconnected, for: endpointID) }
        case .connectionFailed(let endpointID, let error):
            guard let endpointID else { return }  // a socket that never introduced itself
            broadcast(.stateChanged(endpointID, .disconnected, error: error))
            notify(delegate) { $0.connectionManager(self, didChangeTo: .disconnected, for: endpointID) }
        case .bytesReceived(let endpointID, let payloadID, let bytes):
            broadcast(.bytesReceived(endpointID, payloadID, Data(bytes)))
            notify(delegate) { $0.connectionManager(self, didReceive: Data(bytes), withID: payloadID, from: endpointID) }
        case .fileStarted(let endpointID, let payloadID, let name, let total):
            broadcast(.fileStarted(endpointID, payloadID, name: name, totalBytes: total))
            let url = options.receiveDirectory.appendingPathComponent(name)
            let token = CancellationToken(payloadID: payloadID, engine: engine)
            notify(delegate) {
                $0.connectionManager(
                    self, didStartReceivingResourceWithID: payloadID, from: endpointID, at: url, withName: name,
                    cancellationToken: token)
            }
        case .fileReceived(let endpointID, let payloadID, let url, let name):
            broadcast(.fileReceived(endpointID, payloadID, url: url, name: name))
        case .streamReceived(let endpointID, let payloadID, let stream):
            broadcast(.streamReceived(endpointID, payloadID, stream))
            let token = CancellationToken(payloadID: payloadID, engine: engine)
            notify(delegate) {
                $0.connectionManager(self, didReceive: stream, withID: payloadID, from: endpointID, cancellationToken: token)
            }
        case .payloadFailed(let endpointID, let payloadID, let reason, let isOutgoing):
            broadcast(.payloadFailed(endpointID, payloadID, reason: reason, isOutgoing: isOutgoing))
        case .transferUpdate(let endpointID, let update, let isOutgoing):
            let mapped: TransferUpdate
            switch update.status {
            case .inProgress: mapped = .progress(completed: update.bytesTransferred, total: update.totalBytes)
            case .success: mapped = .success
            case .failure: mapped = .failure
            case .canceled: mapped = .canceled
            }
            broadcast(.transferUpdate(
                endpointID, update.payloadID, mapped, kind: update.kind, isOutgoing: isOutgoing,
                bytes: update.bytesTransferred, total: update.totalBytes))
            notify(delegate) {
                $0.connectionManager(self, didReceiveTransferUpdate: mapped, from: endpointID, forPayload: update.payloadID)
            }
        }
    }

    /// Google's decision flow: the advertiser delegate approves incoming requests, then the connection manager
    /// delegate's verification handler decides. Without delegates the app decides through ``accept(_:)``.
    private func decideThroughDelegates(_ info: ConnectionInfo, _ delegates: DelegateState) {
        let engine = self.engine
        let endpointID = info.endpointID
        let decide: @Sendable (Bool) -> Void = { [tasks] accept in
            tasks.spawn {
                if accept { try? await engine.acceptConnection(endpointID) } else { try? await engine.rejectConnection(endpointID) }
            }
        }
        let verify: @Sendable () -> Void = { [weak self] in
            guard let self else { return }
            self.queue.async {
                guard let delegate = self.delegate else { return }
                delegate.connectionManager(self, didChangeTo: .connecting, for: endpointID)
                delegate.connectionManager(
                    self, didReceive: info.verificationToken, from: endpointID, verificationHandler: decide)
            }
        }
        if info.isIncoming, let advertiser = delegates.advertiser, advertiser.delegate != nil {
            queue.async {
                advertiser.delegate?.advertiser(
                    advertiser, didReceiveConnectionRequestFrom: endpointID, with: Data(info.endpointInfo),
                    connectionRequestHandler: { approved in approved ? verify() : decide(false) })
            }
        } else if delegates.delegate != nil {
            verify()
        }
    }

    private func broadcast(_ event: ConnectionEvent) {
        for subscriber in subscribers.withLock({ Array($0.values) }) {
            subscriber.overflow.check(subscriber.continuation.yield(event))
        }
    }

    private func notify(_ delegate: (any ConnectionManagerDelegate)?, _ call: @escaping (any ConnectionManagerDelegate) -> Void) {
        guard let delegate else { return }
        nonisolated(unsafe) let target = delegate
        nonisolated(unsafe) let body = call
        queue.async { body(target) }
    }
}
