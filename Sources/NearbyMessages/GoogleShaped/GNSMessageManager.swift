import Foundation
import NearbyCore

/// Google's `GNSMessageManager` spelling over ``MessageManager``, for code migrating from the iOS SDK: a
/// publication or subscription is returned at once as a handle and starts in the background (its status handler
/// says when it runs); releasing the handle stops it, as in Google's API.
///
/// ```swift
/// let manager = GNSMessageManager(serviceID: "com.example.chat") { params in
///     params.bluetoothPowerErrorHandler = { hasError in print("Bluetooth", hasError ? "off" : "back") }
/// }
/// let publication = manager.publication(with: Message(text: "hi")) { $0.discoveryMode = .scan }
/// let subscription = manager.subscription(
///     messageFoundHandler: { print("found", $0) }, messageLostHandler: { print("lost", $0) })
/// ```
public final class GNSMessageManager: Sendable {
    /// The manager doing the work.
    public let messageManager: MessageManager
    private let radio: GNSRadioRouting

    /// Creates a manager for `serviceID` (Google's API key and project) with the settings `paramsBlock` makes.
    public convenience init(serviceID: String, paramsBlock: ((GNSMessageManagerParams) -> Void)? = nil) {
        let params = GNSMessageManagerParams()
        paramsBlock?(params)
        self.init(
            messageManager: MessageManager(
                serviceID: serviceID, debugLogging: params.debugLogging, consent: params.consent,
                bluetoothController: params.bluetoothController),
            params: params)
    }

    /// Wraps `messageManager` (tests: one on in-memory mediums); the error handlers of `params` are installed as its
    /// `radioStatusHandler` and, for the microphone, its `audioStatusHandler`.
    package init(messageManager: MessageManager, params: GNSMessageManagerParams) {
        self.messageManager = messageManager
        radio = GNSRadioRouting(params)
        let radio = self.radio
        messageManager.radioStatusHandler = { radio.route($0) }
        if let microphone = params.microphonePermissionErrorHandler {
            messageManager.audioStatusHandler = { status in
                if status.device == .microphone { microphone(status.hasError) }
            }
        }
    }

    /// Publishes `message` until the returned handle is released (or its TTL runs out): Google's
    /// `publicationWithMessage:paramsBlock:`.
    public func publication(with message: Message, paramsBlock: ((GNSPublicationParams) -> Void)? = nil) -> GNSPublication {
        let params = GNSPublicationParams()
        paramsBlock?(params)
        let status = params.statusHandler
        let handle = GNSPublication(status: status)
        let options = PublishOptions(strategy: params.strategy, ttl: params.ttl, onExpired: { status?(.inactive) })
        let manager = messageManager
        handle.start(manager: manager, permissionRequest: params.permissionRequestHandler) {
            try await manager.publish(message, options: options)
        }
        return handle
    }

    /// Subscribes until the returned handle is released (or its TTL runs out): Google's
    /// `subscriptionWithMessageFoundHandler:messageLostHandler:paramsBlock:`.
    public func subscription(
        messageFoundHandler: @escaping @Sendable (Message) -> Void,
        messageLostHandler: @escaping @Sendable (Message) -> Void,
        paramsBlock: ((GNSSubscriptionParams) -> Void)? = nil
    ) -> GNSSubscription {
        let params = GNSSubscriptionParams()
        paramsBlock?(params)
        let status = params.statusHandler
        let handle = GNSSubscription(status: status)
        var filter = MessageFilter()
        if let namespace = params.messageNamespace {
            filter = (try? MessageFilter.namespacedType(namespace, params.type)) ?? filter
        }
        let options = SubscribeOptions(
            strategy: params.strategy, beaconStrategy: params.beaconStrategy, deviceTypes: params.deviceTypesToDiscover,
            filter: filter, ttl: params.ttl, onExpired: { status?(.inactive) })
        let manager = messageManager
        handle.start(manager: manager, permissionRequest: params.permissionRequestHandler) {
            try await manager.subscribe(options: options, onFound: messageFoundHandler, onLost: messageLostHandler)
        }
        return handle
    }
}

/// Sends each radio status to the Google-shaped handler it belongs to; a clearing goes to the handler that heard
/// the problem.
final class GNSRadioRouting: Sendable {
    private let power: GNSErrorStateHandler?
    private let permission: GNSErrorStateHandler?
    private let mdns: GNSErrorStateHandler?
    private let bluetoothProblem = LockedValue<RadioStatus.Problem?>(nil)

    init(_ params: GNSMessageManagerParams) {
        power = params.bluetoothPowerErrorHandler
        permission = params.bluetoothPermissionErrorHandler
        mdns = params.mdnsErrorHandler
    }

    func route(_ status: RadioStatus) {
        switch status.radio {
        case .mdns:
            mdns?(status.hasError)
        case .bluetooth:
            let previous = bluetoothProblem.withLock { problem in
                defer { problem = status.problem }
                return problem
            }
            if status.hasError {
                // A problem that changed kind clears the other handler first.
                if let previous, (previous == .permissionDenied) != (status.problem == .permissionDenied) {
                    handler(for: previous)?(false)
                }
                handler(for: status.problem)?(true)
            } else if let previous {
                handler(for: previous)?(false)
            }
        }
    }

    private func handler(for problem: RadioStatus.Problem?) -> GNSErrorStateHandler? {
        problem == .permissionDenied ? permission : power
    }
}
