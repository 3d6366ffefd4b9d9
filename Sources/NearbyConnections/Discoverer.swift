import Foundation
import NearbyCore

/// Finds advertisers of the same service and requests connections to them.
public final class Discoverer: Sendable {
    /// The manager this discoverer belongs to.
    public let connectionManager: ConnectionManager
    private let delegateBox = LockedValue(WeakDiscovererDelegate())

    struct WeakDiscovererDelegate { weak var value: (any DiscovererDelegate)? }

    /// Receives found and lost endpoints. The same events are on the manager's ``ConnectionManager/events``.
    public var delegate: (any DiscovererDelegate)? {
        get { delegateBox.withLock { $0.value } }
        set { delegateBox.withLock { $0.value = newValue } }
    }

    /// Creates a discoverer for `connectionManager`.
    public init(connectionManager: ConnectionManager) {
        self.connectionManager = connectionManager
        connectionManager.attach(discoverer: self)
    }

    deinit {
        let engine = connectionManager.engine
        connectionManager.operations.enqueue { await engine.stopDiscovery() }
    }

    /// Starts discovering on the given mediums (default: those of ``ConnectionOptions/mediums``), after earlier
    /// starts and stops of this manager have finished.
    /// - Throws: `NearbyError`: `.outOfOrderApiCall` when already discovering, why no medium asked for
    ///   can discover (`.bluetoothUnavailable` for BLE without a controller).
    public func startDiscovery(mediums: Set<Medium>? = nil) async throws {
        let manager = connectionManager
        let kinds = try manager.engineKinds(mediums)
        try await manager.operations.run { try await manager.engine.startDiscovery(only: kinds) }
    }

    /// Starts discovering (Google's callback form); `completionHandler` gets `nil` once discovery runs, or the error.
    public func startDiscovery(mediums: Set<Medium>? = nil, completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        connectionManager.enqueueStart(mediums: mediums, completionHandler: completionHandler) { engine, kinds in
            try await engine.startDiscovery(only: kinds)
        }
    }

    /// Stops discovering (Google's form): returns at once; the stop runs after earlier starts and stops of this
    /// manager and before later ones, and `completionHandler` is called when it is done.
    public func stopDiscovery(completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        let engine = connectionManager.engine
        connectionManager.operations.enqueue {
            await engine.stopDiscovery()
            completionHandler?(nil)
        }
    }

    /// Stops discovering and returns when it has stopped.
    package func stopDiscoveryAndWait() async {
        let engine = connectionManager.engine
        try? await connectionManager.operations.runAndWait { await engine.stopDiscovery() }
    }

    /// Requests a connection to a found endpoint, introducing this device with `context` (its endpoint info).
    /// - Parameters:
    ///   - endpointID: The endpoint to connect to, as `.endpointFound` reported it.
    ///   - context: This device's endpoint info, shown to the advertiser in `.connectionRequested`.
    ///   - mediums: The mediums the connection may use (default: any); the endpoint must have been found
    ///     over one of them.
    /// - Throws: `NearbyError`: `.endpointUnknown` for an endpoint not found, `.mediumUnavailable` when
    ///   it was found over a medium not in `mediums`, `.alreadyConnectedToEndpoint` when a connection with it
    ///   exists or is being made, `.outOfOrderApiCall` when the strategy allows no further outgoing connection
    ///   (point-to-point and star: any connection already, incoming or outgoing; see `docs/STRATEGIES.md`), or
    ///   why the connection failed.
    public func requestConnection(to endpointID: EndpointID, using context: Data, mediums: Set<Medium>? = nil)
        async throws
    {
        let engine = connectionManager.engine
        if let mediums, let found = await engine.discoveredEndpoints.first(where: { $0.endpointID == endpointID }),
            !mediums.contains(Medium(found.medium))
        {
            throw NearbyError(
                .mediumUnavailable, "endpoint \(endpointID) was found over \(found.medium), which is not among the mediums asked for")
        }
        try await engine.requestConnection(to: endpointID, endpointInfo: Array(context))
    }

    /// Requests a connection (Google's callback form); `completionHandler` gets `nil` once the request is under way
    /// (the outcome arrives through the delegates), or the error.
    public func requestConnection(
        to endpointID: EndpointID, using context: Data, mediums: Set<Medium>? = nil,
        completionHandler: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        connectionManager.tasks.spawn { [self] in
            do {
                try await requestConnection(to: endpointID, using: context, mediums: mediums)
                completionHandler?(nil)
            } catch {
                completionHandler?(error)
            }
        }
    }
}
