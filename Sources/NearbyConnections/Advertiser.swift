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
        connectionManager.operations.enqueue { await engine.stopAdvertising() }
    }

    /// Starts advertising `context` (the endpoint info, at most 131 bytes) on the given mediums (default: those of
    /// ``ConnectionOptions/mediums``). It starts after earlier starts and stops of this manager have finished.
    /// - Returns: one session per medium, with its port and whether peers can discover it.
    /// - Throws: `NearbyError`: `.outOfOrderApiCall` when already advertising, `.invalidArgument` for
    ///   endpoint info over 131 bytes, why no medium asked for can advertise (`.bluetoothUnavailable` for BLE without
    ///   a controller, `.mediumUnavailable`).
    @discardableResult
    public func startAdvertising(using context: Data, mediums: Set<Medium>? = nil) async throws -> [any AdvertisingSession] {
        let manager = connectionManager
        let kinds = try manager.engineKinds(mediums)
        return try await manager.operations.run {
            try await manager.engine.startAdvertising(
                endpointInfo: Array(context), port: manager.options.listenPort, only: kinds)
        }
    }

    /// Starts advertising (Google's callback form); `completionHandler` gets `nil` once advertising runs, or the
    /// error.
    public func startAdvertising(
        using context: Data, mediums: Set<Medium>? = nil, completionHandler: (@Sendable ((any Error)?) -> Void)? = nil
    ) {
        let port = connectionManager.options.listenPort
        connectionManager.enqueueStart(mediums: mediums, completionHandler: completionHandler) { engine, kinds in
            try await engine.startAdvertising(endpointInfo: Array(context), port: port, only: kinds)
        }
    }

    /// Stops advertising (Google's form): returns at once; the stop runs after earlier starts and stops of this
    /// manager and before later ones, and `completionHandler` is called when it is done. Connections stay up.
    public func stopAdvertising(completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        let engine = connectionManager.engine
        connectionManager.operations.enqueue {
            await engine.stopAdvertising()
            completionHandler?(nil)
        }
    }

    /// Stops advertising and returns when it has stopped (for code that must know, such as Nearby Messages).
    package func stopAdvertisingAndWait() async {
        let engine = connectionManager.engine
        try? await connectionManager.operations.runAndWait { await engine.stopAdvertising() }
    }
}
