import Foundation
import Logging
import NearbyConnections
import NearbyCore

/// The part of a subscription that broadcasts (discovery mode `.broadcast`): it advertises an
/// `InterestAdvertisement` and takes the messages that scanning publications deliver in connection requests.
///
/// A delivered message stays found while deliveries keep coming: each one (re)arms a timer of
/// `SubscribeOptions.deliveryLifetime`; when it fires the delivering publication counts as gone (the message is
/// then lost after `SubscribeOptions.lostAfter`, unless another source still shows it). See
/// `docs/MESSAGES-DISCOVERY-MODES.md`.
final class SubscriptionDeliveries: Sendable {
    private let advertiser: Advertiser
    private let interest: InterestAdvertisement
    private let lifetime: Duration
    private let filter: MessageFilter
    private let logger: Logger
    /// Timer starts and stops run after the lock is released, in order (the lock rule, docs/ARCHITECTURE.md).
    private let state = LockedOutbox<(pending: [String: MessageDescriptor], timers: KeyedTimers<String>)>(([:], KeyedTimers()))

    /// The tracker source of the deliveries of one publication (distinct from the endpoints found by discovery).
    static func source(_ endpoint: String) -> String { "delivery:" + endpoint }

    init(connections: ConnectionManager, subscriberScans: Bool, options: SubscribeOptions, logger: Logger) {
        advertiser = Advertiser(connectionManager: connections)
        interest = InterestAdvertisement(subscriberScans: subscriberScans)
        lifetime = options.deliveryLifetime
        filter = options.filter
        self.logger = logger
    }

    /// Starts advertising the interest.
    func start() async throws -> [any AdvertisingSession] {
        let sessions = try await advertiser.startAdvertising(using: Data(interest.bytes))
        logger.debug("broadcasting interest", metadata: ["mediums": "\(sessions.map(\.medium))"])
        return sessions
    }

    /// Stops advertising and every timer.
    func stop() async {
        state.withLock { state, outbox in outbox.post(state.timers.stopAll()) }
        await advertiser.stopAdvertisingAndWait()
    }

    /// Handles `event` if it belongs to a delivery; returns whether it did.
    func handle(_ event: ConnectionEvent, subscription: Subscription, manager: ConnectionManager) async -> Bool {
        switch event {
        case .connectionRequested(let id, let context, _, true):
            switch try? MessageEnvelope.decode(context) {
            case .message(let message)?:
                if filter.matches(namespace: message.namespace, type: message.type) { present(id, message, subscription) }
                try? await manager.reject(id)
            case .descriptor(let descriptor)? where filter.matches(namespace: descriptor.namespace, type: descriptor.type):
                if let cached = subscription.state.withLock({ $0.fetched[descriptor] }) {
                    present(id, cached, subscription)
                    try? await manager.reject(id)
                } else {
                    state.withLock { $0.pending[id] = descriptor }
                    try? await manager.accept(id)
                }
            default:
                try? await manager.reject(id)
            }
            return true
        case .bytesReceived(let id, _, let data):
            guard let descriptor = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return false }
            if case .message(let message)? = try? MessageEnvelope.decode(data), descriptor.describes(message) {
                subscription.state.withLock { $0.fetched[descriptor] = message }
                present(id, message, subscription)
            } else {
                logger.warning("a delivered message does not match its descriptor", metadata: ["endpoint": "\(id)"])
            }
            await manager.disconnect(from: id)
            return true
        case .stateChanged(let id, .disconnected, _), .stateChanged(let id, .rejected, _):
            return state.withLock { $0.pending.removeValue(forKey: id) } != nil
        default:
            return false
        }
    }

    private func present(_ id: String, _ message: Message, _ subscription: Subscription) {
        let source = Self.source(id)
        subscription.messageStep { state, now in state.messages.present(source, message, now: now) }
        state.withLock { state, outbox in
            outbox.post(state.timers.start(id, after: lifetime, on: subscription.clock) { [weak self, weak subscription] id, generation in
                guard let self, let subscription, self.state.withLock({ $0.timers.fired(id, generation: generation) }) else {
                    return
                }
                subscription.messageStep { state, now in state.messages.sourceGone(source, now: now) }
            })
        }
    }
}
