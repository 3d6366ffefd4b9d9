import NearbyCore
import NearbyMessages
import NearbyWire

/// A subscription running in the service, made by ``ServiceMessageManager/subscribe(options:onFound:onLost:)`` or
/// followed by ``ServiceMessageManager/subscription(handle:onFound:onLost:)``.
///
/// Its found/lost messages come as ``events`` and to the handlers given when it was made. The stream ends without
/// an error after ``cancel()`` or ``ServiceMessageManager/close()``, and throws the `NearbyError` when the
/// connection to the service is lost (the service stopped, or dropped this client): nothing ends silently.
public final class ServiceSubscription: Sendable {
    /// The service's name for it (`sub-…`), stable across restarts of the service.
    public let handle: String
    /// The found and lost messages, in the order the service reported them, starting with what the subscription
    /// had already found when it was followed. For one consumer; it buffers at most 65,536 events it has not taken
    /// (the oldest are dropped beyond that).
    ///
    /// - Throws: from the iteration, `NearbyError` `.endpointIoError` when the connection to the service is lost.
    public let events: AsyncThrowingStream<MessageEvent, any Error>
    private let route: ServiceEventRoute
    private let manager: ServiceMessageManager

    init(handle: String, events: AsyncThrowingStream<MessageEvent, any Error>, route: ServiceEventRoute, manager: ServiceMessageManager) {
        self.handle = handle
        self.events = events
        self.route = route
        self.manager = manager
    }

    /// The messages found and not lost since this connection followed the subscription.
    public var foundMessages: Set<Message> { route.found }

    /// Stops the subscription in the service (a background one is also removed from the state file) and ends
    /// ``events``.
    /// - Throws: `NearbyError` `.endpointIoError` when the connection to the service is gone; `.invalidArgument`
    ///   when the service no longer runs it.
    public func cancel() async throws(NearbyError) {
        defer { manager.router.remove(handle) }
        try await manager.unsubscribe(handle: handle)
    }
}

/// Where one subscription's events go: its stream, its handlers (called in order by one task), and the messages
/// found so far.
final class ServiceEventRoute: Sendable {
    private let stream: AsyncThrowingStream<MessageEvent, any Error>.Continuation
    private let handlers: AsyncStream<MessageEvent>.Continuation?
    private let foundSet = LockedValue<Set<Message>>([])

    /// A route with a new stream and, when there are handlers, the task that calls them.
    static func make(
        onFound: (@Sendable (Message) -> Void)?, onLost: (@Sendable (Message) -> Void)?
    ) -> (ServiceEventRoute, AsyncThrowingStream<MessageEvent, any Error>) {
        let (events, continuation) = AsyncThrowingStream<MessageEvent, any Error>.makeStream(
            bufferingPolicy: .bufferingNewest(65_536))
        var handlers: AsyncStream<MessageEvent>.Continuation?
        if onFound != nil || onLost != nil {
            let (calls, callsContinuation) = AsyncStream<MessageEvent>.makeStream()
            handlers = callsContinuation
            // Owner: the route keeps its input (`handlers`); it ends once the route's `finish(throwing:)` finished
            // that stream (the subscription is removed or the connection ended) or the route is released, after the
            // handlers were called for every event delivered before.
            Task {
                for await event in calls {
                    switch event.kind {
                    case .found: onFound?(event.message)
                    case .lost: onLost?(event.message)
                    }
                }
            }
        }
        return (ServiceEventRoute(stream: continuation, handlers: handlers), events)
    }

    private init(stream: AsyncThrowingStream<MessageEvent, any Error>.Continuation, handlers: AsyncStream<MessageEvent>.Continuation?) {
        self.stream = stream
        self.handlers = handlers
    }

    var found: Set<Message> { foundSet.withLock { $0 } }

    func deliver(_ event: MessageEvent) {
        foundSet.withLock { found in
            switch event.kind {
            case .found: found.insert(event.message)
            case .lost: found.remove(event.message)
            }
        }
        stream.yield(event)
        handlers?.yield(event)
    }

    /// Ends the stream, with `error` when there is one.
    func finish(throwing error: NearbyError?) {
        stream.finish(throwing: error)
        handlers?.finish()
    }
}

/// Sends the events of one connection to the subscriptions they belong to. Events of a subscription whose handle
/// is not known yet (the service may send them before its response) wait until it is registered.
final class ServiceEventRouter: Sendable {
    /// The most events kept for one handle not registered yet.
    static let maximumPending = 4096

    private struct State {
        var routes: [String: ServiceEventRoute] = [:]
        var pending: [String: [MessageEvent]] = [:]
        /// Handles whose events are dropped: cancelled ones and those whose request failed.
        var retired: Set<String> = []
        /// Set once the connection is gone: `.some(nil)` when closed by the app.
        var ended: NearbyError??
    }

    /// Routes are delivered to and finished after the lock is released, in order (the lock rule,
    /// docs/ARCHITECTURE.md).
    private let state = LockedOutbox(State())

    /// Routes one event from the service. A subscription's end (``ServiceEvent/isSubscriptionEnd``) ends its
    /// stream without an error, as ``remove(_:)`` does.
    func deliver(_ event: ServiceEvent) {
        if event.isSubscriptionEnd {
            remove(event.subscription)
            return
        }
        guard let kind = event.kind, let message = event.decodedMessage else { return }
        let messageEvent = MessageEvent(kind: kind, message: message)
        state.withLock { state, outbox in
            if let route = state.routes[event.subscription] {
                outbox.post { route.deliver(messageEvent) }
            } else if !state.retired.contains(event.subscription) {
                var waiting = state.pending[event.subscription, default: []]
                if waiting.count >= Self.maximumPending { waiting.removeFirst() }
                waiting.append(messageEvent)
                state.pending[event.subscription] = waiting
            }
        }
    }

    /// Registers `route` for `handle`, handing it the events that came first; when the connection is already gone
    /// the route ends at once.
    func register(_ route: ServiceEventRoute, for handle: String) {
        state.withLock { state, outbox in
            let waiting = state.pending.removeValue(forKey: handle) ?? []
            if !waiting.isEmpty { outbox.post { for event in waiting { route.deliver(event) } } }
            if case .some(let error) = state.ended {
                outbox.post { route.finish(throwing: error) }
            } else {
                state.routes[handle] = route
            }
        }
    }

    /// Stops routing `handle`: its stream ends without an error, and its later events are dropped.
    func remove(_ handle: String) {
        state.withLock { state, outbox in
            state.retired.insert(handle)
            state.pending[handle] = nil
            if let route = state.routes.removeValue(forKey: handle) { outbox.post { route.finish(throwing: nil) } }
        }
    }

    /// The connection is gone: every stream ends, with `error` unless the app closed it (`nil`).
    func finishAll(throwing error: NearbyError?) {
        state.withLock { state, outbox in
            state.ended = .some(error)
            state.pending = [:]
            let routes = Array(state.routes.values)
            state.routes = [:]
            outbox.post { for route in routes { route.finish(throwing: error) } }
        }
    }
}
