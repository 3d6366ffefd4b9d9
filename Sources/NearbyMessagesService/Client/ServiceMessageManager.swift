import Foundation
import NearbyCore
import NearbyMessages
import NearbyWire

/// Nearby Messages through a running `nearby service`, used like `MessageManager`: publish a message and get a
/// handle to cancel, subscribe and get found/lost messages as a stream or through handlers, and list what runs.
///
/// The publications and subscriptions run in the service (on its mediums, with its consent), over its Unix
/// socket (`docs/MESSAGES-SERVICE.md`). Those made with `background: true` outlive this connection and restarts of
/// the service; the others stop when the connection closes.
///
/// ```swift
/// let nearby = try await ServiceMessageManager.connect(serviceID: "com.example.chat")
/// let publication = try await nearby.publish(Message(text: "hello"), options: ServicePublishOptions(background: true))
/// let subscription = try await nearby.subscribe()
/// do {
///     for try await event in subscription.events { print(event.kind, event.message.text ?? "") }
/// } catch let error as NearbyError {
///     print("the service went away: \(error.message)")  // .endpointIoError
/// }
/// ```
///
/// When no service runs, ``connect(serviceID:socketPath:onDisconnect:)`` throws `NearbyError` `.mediumUnavailable`
/// ("no nearby service answers on PATH"). When the connection is lost later, every subscription's stream throws
/// `.endpointIoError`, `onDisconnect` is called, and requests throw the same error.
public final class ServiceMessageManager: Sendable {
    /// The service ID of the messages published and subscribed to.
    public let serviceID: String
    /// The connection to the service, for requests this API does not cover.
    public let connection: MessageServiceClient
    let router = ServiceEventRouter()
    private let routing = LockedValue<Task<Void, Never>?>(nil)

    private init(serviceID: String, connection: MessageServiceClient) {
        self.serviceID = serviceID
        self.connection = connection
    }

    /// Connects to the service listening on `socketPath` and checks that it answers.
    ///
    /// - Parameters:
    ///   - serviceID: The service ID (the app's), not empty.
    ///   - socketPath: The service's socket; default ``ServicePaths/defaultSocket``, where `nearby service` listens.
    ///   - onDisconnect: Called once if the connection is lost (not after ``close()``), with the error the
    ///     subscriptions' streams end with.
    /// - Throws: `NearbyError` `.mediumUnavailable` when no service answers on `socketPath`; `.invalidArgument` for
    ///   an empty service ID.
    public static func connect(
        serviceID: String, socketPath: URL = ServicePaths.defaultSocket,
        onDisconnect: (@Sendable (NearbyError) -> Void)? = nil
    ) async throws(NearbyError) -> ServiceMessageManager {
        guard !serviceID.isEmpty else { throw NearbyError(.invalidArgument, "the service ID is empty") }
        let connection = try await MessageServiceClient.connect(socketPath: socketPath)
        let manager = ServiceMessageManager(serviceID: serviceID, connection: connection)
        let router = manager.router
        // Owner: this manager; `close()` awaits it (it ends when the connection's events end).
        let routing = Task {
            for await event in connection.events { router.deliver(event) }
            let error = connection.disconnection ?? NearbyError(.endpointIoError, "the service closed the connection")
            let closedByApp = error.code == .outOfOrderApiCall
            router.finishAll(throwing: closedByApp ? nil : error)
            if !closedByApp { onDisconnect?(error) }
        }
        manager.routing.withLock { $0 = routing }
        do {
            _ = try await manager.request(ServiceRequest(id: 0, op: .ping))
        } catch {
            await manager.close()
            throw NearbyError(
                .mediumUnavailable, "the nearby service on \(socketPath.path) does not answer: \(error.message)", cause: error)
        }
        return manager
    }

    /// Publishes `message` through the service.
    /// - Throws: `NearbyError`: the message's own checks (`.messageTooLarge`, `.invalidMessageLabel`), the
    ///   service's refusal (with its code), `.endpointIoError` when the connection is gone.
    public func publish(_ message: Message, options: ServicePublishOptions = ServicePublishOptions()) async throws(NearbyError)
        -> ServicePublication
    {
        try message.validate()
        let response = try await request(
            ServiceRequest(
                id: 0, op: .publish, serviceID: serviceID, contentHex: Hex.encode(message.content),
                namespace: message.namespace, type: message.type, ttl: options.ttl?.protocolSeconds,
                background: options.background))
        let handle = try Self.handle(of: response)
        return ServicePublication(handle: handle, message: message, options: options, manager: self)
    }

    /// Subscribes through the service. Found/lost messages come as the subscription's
    /// ``ServiceSubscription/events`` and to the handlers (called in order, from a task of their own).
    /// - Throws: `NearbyError` `.invalidArgument` for a filter of more than one namespace/type pair, the service's
    ///   refusal, `.endpointIoError` when the connection is gone.
    public func subscribe(
        options: ServiceSubscribeOptions = ServiceSubscribeOptions(), onFound: (@Sendable (Message) -> Void)? = nil,
        onLost: (@Sendable (Message) -> Void)? = nil
    ) async throws(NearbyError) -> ServiceSubscription {
        let entries = options.filter.entries
        guard entries.count <= 1 else {
            throw NearbyError(
                .invalidArgument, "the service filters on one namespace/type pair; this filter has \(entries.count)")
        }
        let response = try await request(
            ServiceRequest(
                id: 0, op: .subscribe, serviceID: serviceID, namespace: entries.first?.namespace,
                type: entries.first?.type, ttl: options.ttl?.protocolSeconds, background: options.background))
        return follow(try Self.handle(of: response), onFound: onFound, onLost: onLost)
    }

    /// Follows a subscription the service already runs (a background one made by an earlier run of the app, found
    /// with ``list()``): its stream starts with the messages it has already found.
    /// - Throws: `NearbyError` `.invalidArgument` when the service runs no subscription named `handle`;
    ///   `.endpointIoError` when the connection is gone.
    public func subscription(
        handle: String, onFound: (@Sendable (Message) -> Void)? = nil, onLost: (@Sendable (Message) -> Void)? = nil
    ) async throws(NearbyError) -> ServiceSubscription {
        _ = try await request(ServiceRequest(id: 0, op: .watch, handle: handle))
        return follow(handle, onFound: onFound, onLost: onLost)
    }

    /// The publications and subscriptions of this service ID the service runs, background or not, whoever made
    /// them, in the order they were made.
    /// - Throws: `NearbyError` `.endpointIoError` when the connection is gone.
    public func list() async throws(NearbyError) -> [ServiceEntry] {
        let response = try await request(ServiceRequest(id: 0, op: .list))
        return (response.entries ?? []).filter { $0.serviceID == serviceID }
    }

    /// Stops the publication named `handle` (one of ``list()``, possibly made by an earlier run).
    /// - Throws: `NearbyError` `.invalidArgument` when the service runs no publication of that name;
    ///   `.endpointIoError` when the connection is gone.
    public func unpublish(handle: String) async throws(NearbyError) {
        _ = try await request(ServiceRequest(id: 0, op: .unpublish, handle: handle))
    }

    /// Stops the subscription named `handle` (one of ``list()``, possibly made by an earlier run).
    /// - Throws: `NearbyError` `.invalidArgument` when the service runs no subscription of that name;
    ///   `.endpointIoError` when the connection is gone.
    public func unsubscribe(handle: String) async throws(NearbyError) {
        defer { router.remove(handle) }
        _ = try await request(ServiceRequest(id: 0, op: .unsubscribe, handle: handle))
    }

    /// Closes the connection: what it made without `background` stops in the service, the subscriptions' streams
    /// end without an error. Background items keep running. Waits until the connection is closed.
    public func close() async {
        await connection.close()
        await routing.withLock { $0 }?.value
    }

    // MARK: - Internals

    private func follow(
        _ handle: String, onFound: (@Sendable (Message) -> Void)?, onLost: (@Sendable (Message) -> Void)?
    ) -> ServiceSubscription {
        let (route, events) = ServiceEventRoute.make(onFound: onFound, onLost: onLost)
        router.register(route, for: handle)
        return ServiceSubscription(handle: handle, events: events, route: route, manager: self)
    }

    /// Sends `request`; a failed response becomes its `NearbyError`.
    func request(_ request: ServiceRequest) async throws(NearbyError) -> ServiceResponse {
        let response = try await connection.send(request)
        guard response.ok else {
            let failure = response.error ?? ServiceFailure(code: NearbyError.Code.unknown.rawValue, message: "the service refused")
            throw NearbyError(NearbyError.Code(rawValue: failure.code), failure.message)
        }
        return response
    }

    private static func handle(of response: ServiceResponse) throws(NearbyError) -> String {
        guard let handle = response.handle else { throw NearbyError(.malformedMessage, "the service's response has no handle") }
        return handle
    }
}
