import Foundation
import NearbyConnections
import NearbyCore
import NearbyWire

/// Sends files, texts and Wi-Fi credentials to Quick Share receivers: discovers the devices visible nearby, connects
/// to one, shows the PIN both screens display, and reports the receiver's answer and the progress.
///
/// ```swift
/// let sender = QuickShareSender(options: QuickShareOptions(deviceName: "Desk"))
/// let events = sender.events
/// try await sender.startDiscovery()
/// for await event in events {
///     switch event {
///     case .deviceFound(let device) where device.name == "Pixel 9":
///         try await sender.send([.file(photo), .text("https://example.com")], to: device.endpointID)
///     case .connected(_, let pin): print("PIN \(pin)")
///     case .finished(_, let result): print(result)
///     default: break
///     }
/// }
/// ```
public final class QuickShareSender: Sendable {
    /// The options it was made with.
    public let options: QuickShareOptions
    /// The endpoint info it introduces itself with in connection requests.
    public let endpointInfo: QuickShareEndpointInfo
    /// The queue delegate methods are called on.
    public let queue: DispatchQueue
    /// The Nearby Connections manager underneath (service `NearbySharing`, point-to-point).
    public var connectionManager: ConnectionManager { runtime.connectionManager }

    private let runtime: QuickShareRuntime
    private let discoverer: Discoverer
    private let delegateBox = LockedValue(WeakDelegate())

    struct WeakDelegate { weak var value: (any QuickShareSenderDelegate)? }

    /// Receives the sender's events (the same as ``events``), on ``queue``.
    public var delegate: (any QuickShareSenderDelegate)? {
        get { delegateBox.withLock { $0.value } }
        set { delegateBox.withLock { $0.value = newValue } }
    }

    /// A new subscription to every event from now on, in order. Subscribe before ``startDiscovery()``.
    public var events: AsyncStream<QuickShareEvent> { runtime.fanOut.subscribe() }

    /// Creates a sender; nothing happens until ``startDiscovery()``.
    public init(options: QuickShareOptions = QuickShareOptions(), queue: DispatchQueue = DispatchQueue(label: "swift-nearby.quickshare")) {
        self.options = options
        self.queue = queue
        endpointInfo = .visible(name: options.deviceName, deviceType: options.deviceType)
        runtime = QuickShareRuntime(role: .sender, options: options, queue: queue, freeSpace: { nil })
        discoverer = Discoverer(connectionManager: runtime.connectionManager)
    }

    /// Starts discovering Quick Share receivers (reported as ``QuickShareEvent/deviceFound(_:)``) and the wake-up
    /// beacon when asked for, which makes Android phones nearby start advertising.
    /// - Returns: the beacon's state.
    /// - Throws: `NearbyError` when discovery cannot start (`.outOfOrderApiCall` when already discovering).
    @discardableResult
    public func startDiscovery() async throws -> QuickShareBeaconStatus {
        try runtime.start { [weak self] event in
            guard let self, let delegate = self.delegate else { return }
            self.queue.async { delegate.sender(self, didReport: event) }
        }
        try await discoverer.startDiscovery()
        return await runtime.startBeacon(.notify, enabled: options.wakeUpBeacon, options: options)
    }

    /// The receivers found so far.
    public var devices: [QuickShareDevice] {
        get async { await runtime.driver.devices }
    }

    /// Sends `items` to the discovered receiver `endpointID`: connects, exchanges the paired keys, introduces the
    /// items and, once the receiver accepts, sends them one by one. Returns once the connection is requested; the
    /// rest arrives as events, ending with ``QuickShareEvent/finished(endpointID:_:)``.
    /// - Throws: `NearbyError` `.invalidArgument` for an empty list, an unreadable or irregular file or an empty
    ///   text; `.endpointUnknown` for a device not found; `.alreadyConnectedToEndpoint` during a share with it; why
    ///   the connection could not be requested.
    public func send(_ items: [QuickShareItem], to endpointID: String) async throws {
        var generator = SystemRandomNumberGenerator()
        let plan = try QuickShareOutgoingPlan(items: items, using: &generator)
        try await runtime.driver.startShare(plan, to: endpointID, ownInfo: endpointInfo.bytes, discoverer: discoverer)
    }

    /// Cancels the share with `endpointID` (a CANCEL frame, then the connection closes).
    public func cancel(_ endpointID: String) async {
        await runtime.driver.cancel(endpointID)
    }

    /// Cancels every share under way.
    public func cancelAll() async {
        await runtime.driver.cancelAll()
    }

    /// Stops discovery, the beacon and every connection, and ends the event streams.
    public func stop() async {
        let discoverer = self.discoverer
        await runtime.shutdown { await discoverer.stopDiscoveryAndWait() }
    }
}

/// The delegate form of ``QuickShareSender``.
public protocol QuickShareSenderDelegate: AnyObject, Sendable {
    /// Any event (the same as on ``QuickShareSender/events``).
    func sender(_ sender: QuickShareSender, didReport event: QuickShareEvent)
}
