import Foundation
import NearbyConnections
import NearbyCore
import NearbyWire

/// Receives Quick Share shares: visible to everyone nearby under a device name, it shows each incoming share's PIN
/// and content, and takes files (into the receive directory), texts and Wi-Fi credentials once accepted.
///
/// ```swift
/// let receiver = QuickShareReceiver(options: QuickShareOptions(deviceName: "Desk", receiveDirectory: downloads))
/// let events = receiver.events
/// try await receiver.start()
/// for await event in events {
///     switch event {
///     case .offerReceived(let share):
///         print("\(share.sender.name ?? "?") wants to send \(share.offer.files.count) files, PIN \(share.pin)")
///         try await receiver.accept(share.sender.endpointID)
///     case .fileReceived(_, let file, let url): print("\(file.name) → \(url.path)")
///     case .finished(_, let result): print(result)
///     default: break
///     }
/// }
/// ```
///
/// One share at a time (Quick Share's point-to-point strategy): a second sender cannot connect until the first
/// share ends. Without Google account certificates a phone reaches this receiver only when its own visibility
/// allows everyone, and both screens show the PIN.
public final class QuickShareReceiver: Sendable {
    /// The options it was made with.
    public let options: QuickShareOptions
    /// The endpoint info it advertises (device type and name).
    public let endpointInfo: QuickShareEndpointInfo
    /// The queue delegate methods are called on.
    public let queue: DispatchQueue
    /// The Nearby Connections manager underneath (service `NearbySharing`, point-to-point).
    public var connectionManager: ConnectionManager { runtime.connectionManager }

    private let runtime: QuickShareRuntime
    private let advertiser = LockedValue<Advertiser?>(nil)
    private let delegateBox = LockedValue(WeakDelegate())

    struct WeakDelegate { weak var value: (any QuickShareReceiverDelegate)? }
    struct WeakReceiver { weak var value: QuickShareReceiver? }

    /// Receives the receiver's events and decides on offers. Without a delegate, decide with ``accept(_:)`` and
    /// ``reject(_:)`` after ``QuickShareEvent/offerReceived(_:)``.
    public var delegate: (any QuickShareReceiverDelegate)? {
        get { delegateBox.withLock { $0.value } }
        set { delegateBox.withLock { $0.value = newValue } }
    }

    /// A new subscription to every event from now on, in order. Subscribe before ``start()``.
    public var events: AsyncStream<QuickShareEvent> { runtime.fanOut.subscribe() }

    /// This device's endpoint ID while it runs.
    public var endpointID: String { connectionManager.localEndpointID }

    /// Creates a receiver; nothing is advertised until ``start()``.
    public init(options: QuickShareOptions = QuickShareOptions(), queue: DispatchQueue = DispatchQueue(label: "swift-nearby.quickshare")) {
        self.options = options
        self.queue = queue
        endpointInfo = .visible(name: options.deviceName, deviceType: options.deviceType)
        let receiverBox = LockedValue(WeakReceiver())
        runtime = QuickShareRuntime(
            role: .receiver(options.limits), options: options, queue: queue, freeSpace: { [options] in options.freeSpace() },
            onOffer: { share in receiverBox.withLock { $0.value }?.offerToDelegate(share) })
        receiverBox.withLock { $0.value = self }
    }

    /// What ``start()`` set up.
    public struct Advertising: Sendable {
        /// This device's endpoint ID.
        public var endpointID: String
        /// The TCP port phones connect to (Wi-Fi LAN).
        public var port: Int?
        /// The DNS-SD service type (`_FC9F5ED42C8A._tcp`).
        public var serviceType: String
        /// The DNS-SD instance name.
        public var instanceName: String
        /// Why phones cannot discover this receiver (avahi-daemon not running, …), or nil.
        public var discoverabilityProblem: NearbyError?
        /// The wake-up beacon's state.
        public var beacon: QuickShareBeaconStatus
    }

    /// Advertises this device to Quick Share senders (mDNS `_FC9F5ED42C8A._tcp` with the endpoint info in TXT `n`)
    /// and starts the wake-up beacon when asked for.
    /// - Throws: `NearbyError` when advertising cannot start (`.outOfOrderApiCall` when already started).
    @discardableResult
    public func start() async throws -> Advertising {
        try runtime.start { [weak self] event in
            guard let self, let delegate = self.delegate else { return }
            self.queue.async { delegate.receiver(self, didReport: event) }
        }
        let advertiser = Advertiser(connectionManager: connectionManager)
        let sessions = try await advertiser.startAdvertising(using: Data(endpointInfo.bytes))
        self.advertiser.withLock { $0 = advertiser }
        let beacon = await runtime.startBeacon(.silent, enabled: options.wakeUpBeacon, options: options)
        let wifi = sessions.first { $0.medium == .wifiLAN } ?? sessions.first
        return Advertising(
            endpointID: endpointID, port: wifi?.port, serviceType: QuickShareServiceName.serviceType,
            instanceName: (try? QuickShareServiceName.instanceName(endpointID: endpointID)) ?? "",
            discoverabilityProblem: wifi?.discoverabilityProblem, beacon: beacon)
    }

    /// Accepts the offer from `endpointID` (answers RESPONSE ACCEPT; the attachments then arrive).
    /// - Throws: `.outOfOrderApiCall` when no offer from it waits for a decision.
    public func accept(_ endpointID: String) async throws {
        try await runtime.driver.decide(endpointID, accept: true)
    }

    /// Rejects the offer from `endpointID` (answers RESPONSE REJECT, then disconnects).
    /// - Throws: `.outOfOrderApiCall` when no offer from it waits for a decision.
    public func reject(_ endpointID: String) async throws {
        try await runtime.driver.decide(endpointID, accept: false)
    }

    /// Cancels the share with `endpointID` at any point (a CANCEL frame; partial files are removed).
    public func cancel(_ endpointID: String) async {
        await runtime.driver.cancel(endpointID)
    }

    /// Cancels every share under way.
    public func cancelAll() async {
        await runtime.driver.cancelAll()
    }

    /// Stops advertising, the beacon and every connection, and ends the event streams.
    public func stop() async {
        let advertiser = self.advertiser.withLock { advertiser -> Advertiser? in
            defer { advertiser = nil }
            return advertiser
        }
        await runtime.shutdown { await advertiser?.stopAdvertisingAndWait() }
    }

    private func offerToDelegate(_ share: QuickShareIncomingShare) {
        guard let delegate else { return }
        let driver = runtime.driver
        let tasks = runtime.tasks
        let endpointID = share.sender.endpointID
        queue.async {
            delegate.receiver(self, didReceive: share) { accept in
                tasks.spawn { try? await driver.decide(endpointID, accept: accept) }
            }
        }
    }
}

/// The delegate form of ``QuickShareReceiver``: every event, and the decision on each offer.
public protocol QuickShareReceiverDelegate: AnyObject, Sendable {
    /// A sender offers `share`; call `decisionHandler` with true to accept, false to reject (within 60 s).
    func receiver(
        _ receiver: QuickShareReceiver, didReceive share: QuickShareIncomingShare,
        decisionHandler: @escaping @Sendable (Bool) -> Void)
    /// Any event (the same as on ``QuickShareReceiver/events``).
    func receiver(_ receiver: QuickShareReceiver, didReport event: QuickShareEvent)
}

extension QuickShareReceiverDelegate {
    /// Does nothing.
    public func receiver(_ receiver: QuickShareReceiver, didReport event: QuickShareEvent) {}
}
