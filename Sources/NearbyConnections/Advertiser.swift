import Foundation
import NearbyCore

/// Advertises this device so discoverers of the same service can find it and request connections.
public final class Advertiser: Sendable {
    /// The manager this advertiser belongs to.
    public let connectionManager: ConnectionManager
    private let delegateBox = LockedValue(WeakAdvertiserDelegate())

    struct WeakAdvertiserDelegate { weak var value: (any AdvertiserDelegate)? }

    /// Receives incoming connection requests. Without a delegate, decide through the manager's events.
    public var delegate: (any AdvertiserDelegate)? {
        get { delegateBox.withLock { $0.value } }
        set { delegateBox.withLock { $0.value = newValue } }
    }

    /// Creates an advertiser for `connectionManager`.
    public init(connectionManager: ConnectionManager) {
        self.connectionManager = connectionManager
        connectionManager.attach(advertiser: self)
    }

    deinit {
        let engine = connectionManager.engine
        Task { await engine.stopAdvertising() }
    }

    /// Starts advertising `context` (the endpoint info, at most 131 bytes) on the given mediums (default: all).
    /// - Returns: one session per medium, with its port and whether peers can discover it.
    @discardableResult
    public func startAdvertising(using context: Data, mediums: Set<Medium>? = nil) async throws -> [any AdvertisingSession] {
        try await connectionManager.engine.startAdvertising(
            endpointInfo: Array(context), port: connectionManager.options.listenPort,
            only: mediums.map { Set($0.compactMap(\.kind)) })
    }

    /// Starts advertising (Google's callback form).
    public func startAdvertising(
        using context: Data, mediums: Set<Medium>? = nil, completionHandler: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        Task {
            do {
                try await startAdvertising(using: context, mediums: mediums)
                completionHandler?(nil)
            } catch {
                completionHandler?(error)
            }
        }
    }

    /// Stops advertising; connections stay up.
    public func stopAdvertising() async {
        await connectionManager.engine.stopAdvertising()
    }

    /// Stops advertising (Google's callback form).
    public func stopAdvertising(completionHandler: (@Sendable ((any Error)?) -> Void)?) {
        Task {
            await stopAdvertising()
            completionHandler?(nil)
        }
    }
}
