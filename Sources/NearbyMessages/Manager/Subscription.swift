import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyWire

/// A running subscription: found/lost messages go to its callbacks and to every iterator of it (an
/// `AsyncSequence` of ``MessageEvent``). It stops when ``cancel()`` is called, when the object is released, or when
/// the TTL runs out; iterations then end.
///
/// Each distinct message (namespace, type, content) is found once however many publishers carry it, and lost when
/// the last of them stops (after ``SubscribeOptions/lostAfter``).
public final class Subscription: AsyncSequence, Sendable {
    /// The events.
    public typealias Element = MessageEvent

    /// The iterator of one listener. It keeps the subscription alive while it iterates, so
    /// `for await event in try await manager.subscribe() { … }` runs until the subscription stops.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: Subscription
        var base: AsyncStream<MessageEvent>.Iterator

        /// The next event, or `nil` once the subscription has stopped.
        public mutating func next() async -> MessageEvent? {
            await base.next()
        }
    }

    /// The options.
    public let options: SubscribeOptions

    let logger: Logger
    private let onFound: (@Sendable (Message) -> Void)?
    private let onLost: (@Sendable (Message) -> Void)?
    private let fanOut = EventFanOut()
    /// Timer starts and stops and found/lost deliveries are posted under the lock and run after it, in the order
    /// of the tracker steps (the lock rule, docs/ARCHITECTURE.md).
    let state: LockedOutbox<State>
    /// The event router, the beacon scan, the TTL timer and the audio listener: ``cancel()`` and `deinit` cancel
    /// them without waiting (the TTL timer's child calls ``cancel()`` itself, so nothing here awaits the scope).
    let tasks = TaskScope()
    private let owner: MessageManager
    let clock: NearbyClock
    private let connections = LockedValue<(manager: ConnectionManager, discoverer: Discoverer)?>(nil)
    /// The interest advertisement and the deliveries it gets, in discovery mode `.broadcast`.
    let deliveries = LockedValue<SubscriptionDeliveries?>(nil)
    /// The endpoints whose advertisement was handled (whether or not it passed the filter) and those handled as
    /// gone, so a test knows every publication was considered before it checks what did not come through.
    let handledEndpoints = LockedValue<(found: Set<String>, lost: Set<String>)>(([], []))

    struct State: Sendable {
        var messages: FoundLostTracker<String, Message>
        var beacons: BeaconTracker
        /// Descriptors to fetch, by endpoint, with the attempts made so far.
        var fetching: [String: (descriptor: MessageDescriptor, attempts: Int)] = [:]
        /// The endpoint being fetched from: one connection at a time (the point-to-point strategy allows no more).
        var activeFetch: String?
        /// Large messages already fetched, by descriptor (at most `SubscriptionLimits.maxCachedMessages`).
        var fetched: FetchedMessageCache
        var stopped = false
        /// One timer per gone publisher and per beacon, while its grace period runs.
        var timers = KeyedTimers<TimerKey>()
        /// The timer starts and stops a step decided, to run after the lock (Subscription+FoundLost.swift).
        var timerWork: [@Sendable () -> Void] = []
        /// The audio rule's gate and timers, when the subscription's only medium is audio (Subscription+Audio.swift).
        var audio: AudioScanState?
        /// Whether sightings are being turned away at a limit (``SubscriptionLimits``), so it is logged once per
        /// episode; a loss ends the episode.
        var atLimit = false
    }

    /// What a timer is for.
    enum TimerKey: Hashable, Sendable {
        /// A publisher's endpoint that went away.
        case message(String)
        /// A beacon.
        case beacon(BeaconTracker.Key)
    }

    init(
        options: SubscribeOptions, owner: MessageManager, onFound: (@Sendable (Message) -> Void)?,
        onLost: (@Sendable (Message) -> Void)?
    ) {
        self.options = options
        self.owner = owner
        self.clock = owner.clock
        self.logger = owner.logger
        self.onFound = onFound
        self.onLost = onLost
        let limits = options.limits
        state = LockedOutbox(State(
            messages: FoundLostTracker(
                lostAfter: options.lostAfter, maxSources: limits.maxPublishers, maxItems: limits.maxFoundMessages),
            beacons: BeaconTracker(strategy: options.beaconStrategy, maxBeacons: limits.maxTrackedBeacons),
            fetched: FetchedMessageCache(capacity: limits.maxCachedMessages)))
    }

    /// A new listener: first a `found` event for every message found and not yet lost, then every event from now
    /// on, until the subscription stops.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(subscription: self, base: fanOut.stream().makeAsyncIterator())
    }

    /// A `found` event for every message found and not yet lost, then every event from now on, as a stream,
    /// until the subscription stops. The stream does not keep the
    /// subscription alive: hold on to it (or iterate the subscription itself).
    ///
    /// Each stream buffers at most 65,536 events its consumer has not taken; a consumer that falls further behind
    /// loses the oldest buffered events (the newest are kept), so memory stays bounded when nobody iterates.
    public var events: AsyncStream<MessageEvent> { fanOut.stream() }

    /// The messages currently found.
    public var foundMessages: Set<Message> { state.withLock { $0.messages.foundItems } }

    /// Whether the subscription has stopped.
    public var isCancelled: Bool { state.withLock { $0.stopped } }

    // MARK: - Starting

    func startDiscovery(_ manager: ConnectionManager, mode: MessageStrategy.Mode) async throws {
        let events = manager.events
        let discoverer = Discoverer(connectionManager: manager)
        connections.withLock { $0 = (manager, discoverer) }
        let broadcasting = mode.contains(.broadcast)
            ? SubscriptionDeliveries(
                connections: manager, subscriberScans: mode.contains(.scan), options: options, logger: logger)
            : nil
        deliveries.withLock { $0 = broadcasting }
        let task = tasks.spawnCancellable { [weak self] in
            for await event in events {
                guard let self else { return }
                await self.handle(event, manager: manager, discoverer: discoverer)
            }
        }
        do {
            if mode.contains(.scan) { try await discoverer.startDiscovery() }
            if let broadcasting {
                for session in try await broadcasting.start() { owner.reportAdvertising(session) }
            }
        } catch {
            task?.cancel()
            await manager.shutdown()
            connections.withLock { $0 = nil }
            throw error
        }
        logger.debug("discovering publications", metadata: ["mode": "\(mode.rawValue)"])
    }

    func startBeaconScan(_ source: any AdvertisingReportSource) {
        let reports = source.advertisingReports(options.beaconStrategy.scanSettings)
        let owner = self.owner
        tasks.spawn { [weak self] in
            do {
                for try await report in reports {
                    guard let self else { return }
                    self.beaconStep { state, now in state.beacons.receive(report, now: now) }
                }
            } catch {
                let nearby = (error as? NearbyError) ?? NearbyError(.bluetoothUnavailable, "BLE scanning failed", cause: error)
                owner.onBluetoothProblem(nearby)
            }
        }
        logger.debug("scanning for beacons", metadata: ["lowDutyCycle": "\(options.beaconStrategy.scanSettings.lowDutyCycle)"])
    }

    /// Starts the TTL timer, if the options have a TTL. (Found/lost timers start and stop with the sightings.)
    func startTimers() {
        if let ttl = options.ttl {
            let onExpired = options.onExpired
            let clock = self.clock
            tasks.spawn { [weak self] in
                do { try await clock.sleep(for: ttl) } catch { return }
                guard let self else { return }
                self.logger.debug("subscription expired")
                await self.cancel()
                onExpired?()
            }
        }
    }

    // MARK: - Stopping

    /// Stops subscribing: discovery and scanning stop and every iteration ends. Found messages are not reported lost.
    public func cancel() async {
        let wasStopped = state.withLock { state in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !wasStopped else { return }
        stopTimers()
        tasks.cancel()
        fanOut.finish()
        await deliveries.withLock({ $0 })?.stop()
        if let (manager, discoverer) = connections.withLock({ $0 }) {
            await discoverer.stopDiscoveryAndWait()
            await manager.shutdown()
        }
    }

    /// Cancels every timer (after the lock is released).
    private func stopTimers() {
        state.withLock { state, outbox in
            outbox.post(state.timers.stopAll())
            if state.audio != nil { outbox.post(state.audio!.timers.stopAll()) }
        }
    }

    deinit {
        stopTimers()
        tasks.cancel()
        fanOut.finish()
        let deliveries = self.deliveries.withLock { $0 }
        if let (manager, discoverer) = connections.withLock({ $0 }) {
            owner.releasedStops.spawn {
                await deliveries?.stop()
                await discoverer.stopDiscoveryAndWait()
                await manager.shutdown()
            }
        }
    }

    // MARK: - Nearby devices

    private func handle(_ event: ConnectionEvent, manager: ConnectionManager, discoverer: Discoverer) async {
        defer {
            switch event {
            case .endpointFound(let id, _, _): handledEndpoints.withLock { _ = $0.found.insert(id) }
            case .endpointLost(let id): handledEndpoints.withLock { _ = $0.lost.insert(id) }
            default: break
            }
        }
        if let deliveries = deliveries.withLock({ $0 }), await deliveries.handle(event, subscription: self, manager: manager) {
            return
        }
        switch event {
        case .endpointFound(let id, let tagged, _):
            let context = audioTagStripped(id, tagged)
            guard let envelope = try? MessageEnvelope.decode(context) else {
                if options.includePlainEndpointInfo, options.filter.matches(namespace: "", type: "") {
                    present(id, Message(content: context))
                } else {
                    logger.debug("ignoring an endpoint that is not a publication", metadata: ["endpoint": "\(id)"])
                }
                return
            }
            switch envelope {
            case .message(let message):
                guard options.filter.matches(namespace: message.namespace, type: message.type) else { return }
                present(id, message)
            case .descriptor(let descriptor):
                guard options.filter.matches(namespace: descriptor.namespace, type: descriptor.type) else { return }
                let cached = state.withLock { state -> Message?? in
                    if let message = state.fetched.message(for: descriptor) { return message }
                    // A fetch only when its message could be taken: a flood of descriptors beyond the limits
                    // costs no connection.
                    guard state.messages.hasRoom(for: id), state.fetching.count < options.limits.maxPublishers else {
                        return .some(nil)
                    }
                    state.fetching[id] = (descriptor, 0)
                    return nil
                }
                switch cached {
                case .some(.some(let message)): present(id, message)
                case .some(.none): noteLimitReached()
                case .none: await pumpFetches(discoverer)
                }
            case .fetchRequest:
                return
            }
        case .endpointLost(let id):
            audioEndpointGone(id)
            state.withLock { state in
                state.fetching[id] = nil
                if state.activeFetch == id { state.activeFetch = nil }
            }
            messageStep { state, now in state.messages.sourceGone(id, now: now) }
            await pumpFetches(discoverer)
        case .discoveryFailed(let medium, let error):
            owner.report(error, medium: medium)
        case .connectionRequested(let id, _, _, false):
            if state.withLock({ $0.fetching[id] != nil }) {
                try? await manager.accept(id)
            } else {
                try? await manager.reject(id)
            }
        case .connectionRequested(let id, _, _, true):
            try? await manager.reject(id)
        case .bytesReceived(let id, _, let data):
            guard let pending = state.withLock({ $0.fetching[id] }) else { return }
            guard case .message(let message)? = try? MessageEnvelope.decode(data), pending.descriptor.describes(message)
            else {
                logger.warning("a fetched message does not match its descriptor", metadata: ["endpoint": "\(id)"])
                await manager.disconnect(from: id)
                return
            }
            state.withLock { state in
                state.fetching[id] = nil
                state.fetched.store(message, for: pending.descriptor)
                if state.activeFetch == id { state.activeFetch = nil }
            }
            logger.debug("fetched a message", metadata: ["endpoint": "\(id)", "bytes": "\(message.content.count)"])
            await manager.disconnect(from: id)
            present(id, message)
            await pumpFetches(discoverer)
        case .stateChanged(let id, .disconnected, _), .stateChanged(let id, .rejected, _):
            await fetchFailed(id, discoverer)
        default:
            break
        }
    }

    /// The most attempts at fetching one large message.
    static let maximumFetchAttempts = 5

    /// Starts the next fetch when none is running.
    private func pumpFetches(_ discoverer: Discoverer) async {
        let next = state.withLock { state -> String? in
            guard state.activeFetch == nil, !state.stopped else { return nil }
            guard let id = state.fetching.min(by: { $0.value.attempts < $1.value.attempts })?.key else { return nil }
            state.activeFetch = id
            state.fetching[id]?.attempts += 1
            return id
        }
        guard let id = next else { return }
        logger.debug("fetching a large message", metadata: ["endpoint": "\(id)"])
        do {
            try await discoverer.requestConnection(to: id, using: Data(MessageEnvelope.fetchRequest.bytes))
        } catch {
            logger.debug("cannot request a fetch", metadata: ["endpoint": "\(id)", "error": "\(error)"])
            await fetchFailed(id, discoverer)
        }
    }

    /// A fetch from `id` ended without the message: retry later (a few times), then give up.
    private func fetchFailed(_ id: String, _ discoverer: Discoverer) async {
        let attempts = state.withLock { state -> Int? in
            guard state.activeFetch == id else { return nil }
            state.activeFetch = nil
            guard let pending = state.fetching[id] else { return nil }
            if pending.attempts >= Self.maximumFetchAttempts {
                state.fetching[id] = nil
                return nil
            }
            return pending.attempts
        }
        if let attempts {
            // Back off (with jitter) so that subscribers racing for one publisher spread out.
            try? await clock.sleep(for: .milliseconds(Int.random(in: 200...600) * attempts))
        }
        await pumpFetches(discoverer)
    }

    private func present(_ id: String, _ message: Message) {
        if presentIfHeard(id, message) { return }
        messageStep { state, now in state.messages.present(id, message, now: now) }
    }

    // MARK: - Delivery

    func deliver(_ event: MessageEvent) {
        guard !state.withLock({ $0.stopped }) else { return }
        logger.debug("message \(event.kind)", metadata: ["message": "\(event.message)"])
        switch event.kind {
        case .found: onFound?(event.message)
        case .lost: onLost?(event.message)
        }
        fanOut.yield(event)
    }
}
