import Foundation
import Logging
import NearbyMessages
import NearbyWire

/// The background service of Nearby Messages, in process: it runs publications and subscriptions for clients,
/// sends each client the found/lost events of its subscriptions (and of those it watches), shows them as desktop
/// notifications, and saves the *background* ones in a state file so that ``restore()`` starts them again after a
/// restart.
///
/// `nearby service` runs one behind a Unix socket (``MessageServiceServer``); an app may instead run one itself and
/// call ``handle(_:from:)`` directly (see `docs/MESSAGES-SERVICE.md`).
///
/// ```swift
/// let service = MessageService(
///     managerFactory: { MessageManager(serviceID: $0) }, stateFile: ServiceStateFile(url: ServicePaths.defaultStateFile))
/// _ = await service.restore()
/// let me = await service.connect { event in print(event.event, event.message) }
/// _ = await service.handle(ServiceRequest(id: 1, op: .subscribe, serviceID: "com.example", background: true), from: me)
/// ```
public actor MessageService {
    /// Makes the manager of a service ID (called once per service ID).
    public typealias ManagerFactory = @Sendable (_ serviceID: String) throws -> MessageManager
    /// Receives the events for one client; must not block.
    public typealias EventSink = @Sendable (ServiceEvent) -> Void

    /// A connected client.
    public struct ClientID: Hashable, Sendable, CustomStringConvertible {
        let value: UInt64
        /// `client-N`.
        public var description: String { "client-\(value)" }
    }

    /// A running publication or subscription.
    struct Item {
        var entry: ServiceEntry
        /// The client it ends with (unless it is background); `nil` once that client is gone.
        var owner: ClientID?
        var publication: Publication?
        var subscription: Subscription?
        var forwarding: Task<Void, Never>?
    }

    /// A connected client: where its events go and what it watches.
    struct Client {
        var sink: EventSink
        /// Waits until the client's output has room for another event line (``connect(_:waitForRoom:)``).
        var waitForRoom: (@Sendable () async -> Void)?
        /// Whether it watches every subscription.
        var watchingAll = false
        /// The subscriptions it watches beyond its own.
        var watching: Set<String> = []

        func follows(_ handle: String) -> Bool { watchingAll || watching.contains(handle) }
    }

    let managerFactory: ManagerFactory
    let strategy: MessageStrategy
    let stateFile: ServiceStateFile?
    let notifier: (any ServiceNotifier)?
    let logger: Logger
    let now: @Sendable () -> Date
    /// What the service takes at most.
    public nonisolated let limits: ServiceLimits
    var notifications: NotificationRateLimit
    var managers: [String: MessageManager] = [:]
    var items: [String: Item] = [:]
    /// Handles in the order they were made, for `list`.
    var order: [String] = []
    var clients: [ClientID: Client] = [:]
    var saved = ServiceState()
    private var nextClient: UInt64 = 0

    /// Creates a service.
    ///
    /// - Parameters:
    ///   - managerFactory: Makes the `MessageManager` of a service ID (its consent and radio handlers are the app's).
    ///   - strategy: The strategy of every publication and subscription (the mediums to use); default all.
    ///   - stateFile: Where background publications and subscriptions are saved; `nil` keeps them in memory only.
    ///   - notifier: Shows found/lost messages (``DesktopNotifier``); `nil` shows nothing.
    ///   - logger: The logger.
    ///   - now: The wall clock TTLs are saved against (they must survive a restart) and notifications are
    ///     rate-limited on; injectable for tests.
    ///   - limits: What the service takes at most (``ServiceLimits``).
    public init(
        managerFactory: @escaping ManagerFactory, strategy: MessageStrategy = .default, stateFile: ServiceStateFile? = nil,
        notifier: (any ServiceNotifier)? = nil, logger: Logger = Logger(label: "nearby.service"),
        now: @escaping @Sendable () -> Date = { Date() }, limits: ServiceLimits = ServiceLimits()
    ) {
        self.managerFactory = managerFactory
        self.strategy = strategy
        self.stateFile = stateFile
        self.notifier = notifier
        self.logger = logger
        self.now = now
        self.limits = limits
        notifications = NotificationRateLimit(burst: limits.notificationBurst, interval: limits.notificationInterval)
    }

    // MARK: - Clients

    /// Registers a client whose events go to `sink`; pass the ID to ``handle(_:from:)`` and ``disconnect(_:)``.
    public func connect(_ sink: @escaping EventSink) -> ClientID {
        register(Client(sink: sink))
    }

    /// Registers a client whose events go to `sink`, and whose output can say when it has room: what a `watch`
    /// sends first (what the subscriptions have found, possibly many large messages) waits on `waitForRoom`
    /// before each event, so it never floods the client's output.
    public func connect(_ sink: @escaping EventSink, waitForRoom: @escaping @Sendable () async -> Void) -> ClientID {
        register(Client(sink: sink, waitForRoom: waitForRoom))
    }

    private func register(_ client: Client) -> ClientID {
        nextClient += 1
        let id = ClientID(value: nextClient)
        clients[id] = client
        logger.debug("client connected", metadata: ["client": "\(id)"])
        return id
    }

    /// Forgets a client: what it made without `background` stops; its background items keep running.
    public func disconnect(_ client: ClientID) async {
        clients[client] = nil
        let owned = order.filter { items[$0]?.owner == client }
        for handle in owned {
            if items[handle]?.entry.background == true {
                items[handle]?.owner = nil
            } else {
                await stop(handle, reason: .ownerDisconnected)
            }
        }
        logger.debug("client disconnected", metadata: ["client": "\(client)", "stopped": "\(owned.count)"])
    }

    // MARK: - Lifecycle

    /// Reads the state file and starts every saved publication and subscription whose TTL has not run out. Returns
    /// the problems met: a corrupt state file (moved aside; the service starts empty) and items that could not
    /// start (they stay saved and are tried again at the next start).
    public func restore() async -> [NearbyError] {
        guard let stateFile else { return [] }
        var problems: [NearbyError] = []
        do {
            let loaded = try stateFile.load()
            if let problem = loaded.problem { problems.append(problem) }
            saved = loaded.state
            if loaded.droppedEntries > 0, let error = persist() { problems.append(error) }
        } catch {
            problems.append(error)
            return problems
        }
        let (alive, expired) = saved.partitioned(at: now())
        if !expired.isEmpty {
            for entry in expired { saved.remove(entry.handle) }
            if let error = persist() { problems.append(error) }
        }
        for entry in alive {
            do {
                try await start(entry, owner: nil)
            } catch {
                logger.warning("cannot restore", metadata: ["handle": "\(entry.handle)", "error": "\(error)"])
                problems.append(NearbyError(error.code, "cannot restore \(entry.handle): \(error.message)"))
            }
        }
        logger.info("restored", metadata: ["running": "\(items.count)", "saved": "\(saved.entries.count)"])
        return problems
    }

    /// Stops every publication and subscription, leaving the state file as it is (so the next start restores the
    /// background ones).
    public func shutdown() async {
        for handle in order { await cancel(items[handle]) }
        items = [:]
        order = []
    }

    /// What is running, in the order it was made.
    public var entries: [ServiceEntry] { order.compactMap { items[$0]?.entry } }

    /// The background entries saved in the state file.
    public var savedState: ServiceState { saved }

    // MARK: - Running items

    /// Starts the publication or subscription `entry` describes, for `owner`.
    func start(_ entry: ServiceEntry, owner: ClientID?) async throws(NearbyError) {
        guard items[entry.handle] == nil else {
            throw NearbyError(.invalidArgument, "\(entry.handle) is already running")
        }
        guard items.count < limits.maxItems else {
            throw NearbyError(
                .limitExceeded, "the service runs \(items.count) publications and subscriptions, its limit")
        }
        let manager = try manager(for: entry.serviceID)
        let ttl = entry.expiresAt.map { Duration.milliseconds(Int64(max(1, $0.timeIntervalSince(now()) * 1000))) }
        let handle = entry.handle
        // Owner: none keeps the handle (the TTL timer's callback is synchronous); it ends when `expired(_:)` has
        // stopped the item, or at once when the service is gone.
        let onExpired: @Sendable () -> Void = { [weak self] in Task { await self?.expired(handle) } }
        var item = Item(entry: entry, owner: owner)
        do {
            switch entry.kind {
            case .publication:
                let content = try Hex.decode(entry.contentHex ?? "")
                let message = Message(content: Data(content), namespace: entry.namespace ?? "", type: entry.type ?? "")
                item.publication = try await manager.publish(
                    message, options: PublishOptions(strategy: strategy, ttl: ttl, onExpired: onExpired))
            case .subscription:
                var filter = MessageFilter()
                if entry.namespace != nil || entry.type != nil {
                    filter = try MessageFilter.namespacedType(entry.namespace ?? "", entry.type)
                }
                let subscription = try await manager.subscribe(
                    options: SubscribeOptions(strategy: strategy, filter: filter, ttl: ttl, onExpired: onExpired))
                let events = subscription.events
                item.subscription = subscription
                // Owner: this service (`Item.forwarding`); `cancel(_:)` cancels it when the item stops or the
                // service shuts down; it also ends when the subscription's events end.
                item.forwarding = Task { [weak self] in
                    for await event in events { await self?.deliver(event, from: handle) }
                }
            }
        } catch {
            releaseUnusedManager(entry.serviceID)
            throw (error as? NearbyError) ?? NearbyError(.unknown, "\(error)", cause: error)
        }
        items[handle] = item
        order.append(handle)
        logger.debug("started", metadata: ["handle": "\(handle)", "background": "\(entry.background)"])
    }

    /// Stops `handle` and forgets it (and its saved entry). A subscription's end is sent, with `reason`, to the
    /// clients still following it (its owner, unless that is the one that went, and its watchers).
    func stop(_ handle: String, reason: ServiceEvent.EndReason? = nil) async {
        if let reason, let item = items[handle], item.entry.kind == .subscription {
            send(ServiceEvent.subscriptionEnded(handle, serviceID: item.entry.serviceID, reason: reason), for: item, handle)
        }
        let item = items.removeValue(forKey: handle)
        order.removeAll { $0 == handle }
        for id in clients.keys { clients[id]?.watching.remove(handle) }
        if let item { releaseUnusedManager(item.entry.serviceID) }
        await cancel(item)
        if saved.remove(handle), let error = persist() {
            logger.warning("cannot save the state", metadata: ["error": "\(error)"])
        }
    }

    private func cancel(_ item: Item?) async {
        item?.forwarding?.cancel()
        await item?.publication?.cancel()
        await item?.subscription?.cancel()
    }

    private func expired(_ handle: String) async {
        logger.debug("expired", metadata: ["handle": "\(handle)"])
        await stop(handle, reason: .expired)
    }

    /// The manager of `serviceID`, made on first use.
    private func manager(for serviceID: String) throws(NearbyError) -> MessageManager {
        if let manager = managers[serviceID] { return manager }
        guard managers.count < limits.maxServiceIDs else {
            throw NearbyError(.limitExceeded, "the service uses \(managers.count) service IDs, its limit")
        }
        do {
            let manager = try managerFactory(serviceID)
            managers[serviceID] = manager
            return manager
        } catch {
            throw (error as? NearbyError) ?? NearbyError(.unknown, "cannot make a manager for \(serviceID)", cause: error)
        }
    }

    /// Forgets the manager of `serviceID` when no item uses it any more.
    private func releaseUnusedManager(_ serviceID: String) {
        guard !items.values.contains(where: { $0.entry.serviceID == serviceID }) else { return }
        managers[serviceID] = nil
    }

    /// The service IDs with a manager (tests check that they are released).
    var serviceIDsInUse: Set<String> { Set(managers.keys) }

    /// Writes the saved state; returns the error instead of throwing it.
    func persist() -> NearbyError? {
        guard let stateFile else { return nil }
        do {
            try stateFile.save(saved)
            return nil
        } catch {
            return error
        }
    }

    // MARK: - Events

    /// Sends a subscription's event to its owner, to the clients watching it, and to the notifier: first it waits
    /// until each of those clients has room for it (``connect(_:waitForRoom:)``; the subscription's later events wait
    /// meanwhile in its stream), so a burst of large events never overflows a client that reads.
    func deliver(_ event: MessageEvent, from handle: String) async {
        guard let owner = items[handle].map(\.owner) else { return }
        for (id, client) in clients where id == owner || client.follows(handle) {
            await client.waitForRoom?()
        }
        forward(event, from: handle)
    }

    /// ``deliver(_:from:)`` without waiting for room.
    private func forward(_ event: MessageEvent, from handle: String) {
        guard let item = items[handle] else { return }
        let serviceEvent = ServiceEvent(event.kind, event.message, subscription: handle, serviceID: item.entry.serviceID)
        send(serviceEvent, for: item, handle)
        guard let notifier else { return }
        let dropped = notifications.dropped
        if notifications.admit(now: now().timeIntervalSinceReferenceDate) {
            if dropped > 0 { logger.notice("desktop notifications were dropped (rate limit)", metadata: ["dropped": "\(dropped)"]) }
            notifier.notify(serviceEvent)
        }
    }

    /// Sends `event` to the clients following subscription `handle`: its owner and its watchers.
    func send(_ event: ServiceEvent, for item: Item, _ handle: String) {
        for (id, client) in clients where id == item.owner || client.follows(handle) {
            client.sink(event)
        }
    }
}
