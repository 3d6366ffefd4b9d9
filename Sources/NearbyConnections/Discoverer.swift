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
        Task { await engine.stopDiscovery() }
    }

    /// Starts discovering on the given mediums (default: all).
    public func startDiscovery(mediums: Set<Medium>? = nil) async throws {
        try await connectionManager.engine.startDiscovery(only: mediums.map { Set($0.compactMap(\.kind)) })
    }

    /// Starts discovering (Google's callback form).
    public func startDiscovery(mediums: Set<Medium>? = nil, completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        Task {
            do {
                try await startDiscovery(mediums: mediums)
                completionHandler?(nil)
            } catch {
                completionHandler?(error)
            }
        }
    }

    /// Stops discovering.
    public func stopDiscovery() async {
        await connectionManager.engine.stopDiscovery()
    }

    /// Requests a connection to a found endpoint, introducing this device with `context` (its endpoint info).
    public func requestConnection(to endpointID: EndpointID, using context: Data) async throws {
        try await connectionManager.engine.requestConnection(to: endpointID, endpointInfo: Array(context))
    }

    /// Requests a connection (Google's callback form).
    public func requestConnection(
        to endpointID: EndpointID, using context: Data, completionHandler: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        Task {
            do {
                try await requestConnection(to: endpointID, using: context)
                completionHandler?(nil)
            } catch {
                completionHandler?(error)
            }
        }
    }
}
