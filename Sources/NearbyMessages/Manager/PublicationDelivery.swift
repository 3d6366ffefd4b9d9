import Foundation
import Logging
import NearbyConnections
import NearbyCore

/// The part of a publication that scans (discovery mode `.scan`): it discovers subscriptions that broadcast their
/// interest and delivers the message to each in a connection request, following a `DeliverySchedule`.
///
/// The request's endpoint info is the message's envelope (the message itself, or the descriptor of a large one).
/// The subscription rejects the request once it has read a whole message; for a descriptor it accepts, and the
/// publication's serving loop sends the message as for a fetch. See `docs/MESSAGES-DISCOVERY-MODES.md`.
final class PublicationDelivery: Sendable {
    private let envelope: [UInt8]
    private let connections: ConnectionManager
    private let discoverer: Discoverer
    private let clock: NearbyClock
    private let logger: Logger
    /// Timer starts and stops run after the lock is released, in order (the lock rule, docs/ARCHITECTURE.md).
    private let state: LockedOutbox<(schedule: DeliverySchedule, timers: KeyedTimers<DeliverySchedule.Timer>)>

    init(
        envelope: [UInt8], connections: ConnectionManager, publicationBroadcasts: Bool, interval: Duration,
        clock: NearbyClock, logger: Logger
    ) {
        self.envelope = envelope
        self.connections = connections
        self.discoverer = Discoverer(connectionManager: connections)
        self.clock = clock
        self.logger = logger
        state = LockedOutbox((DeliverySchedule(interval: interval, publicationBroadcasts: publicationBroadcasts), KeyedTimers()))
    }

    /// How many deliveries to each subscription have ended (tests wait on it).
    var completedDeliveries: [String: Int] { state.withLock { $0.schedule.completed } }

    /// Starts discovering interested subscriptions.
    func start() async throws {
        try await discoverer.startDiscovery()
        logger.debug("scanning for interested subscriptions")
    }

    /// Stops discovery and every timer.
    func stop() async {
        state.withLock { state, outbox in outbox.post(state.timers.stopAll()) }
        await discoverer.stopDiscoveryAndWait()
    }

    /// Handles one event of the publication's connection manager.
    func handle(_ event: ConnectionEvent) async {
        switch event {
        case .endpointFound(let id, let context, _):
            guard let interest = try? InterestAdvertisement.decode(context) else { return }
            step { $0.found(id, interest) }
        case .endpointLost(let id):
            step { $0.lost(id) }
        case .connectionRequested(let id, _, _, false) where state.withLock({ $0.schedule.active == id }):
            // Our own request reached the subscription: accept, so that a descriptor's fetch can run.
            try? await connections.accept(id)
        case .stateChanged(let id, .rejected, _), .stateChanged(let id, .disconnected, _):
            step { $0.finished(id) }
        default:
            break
        }
    }

    private func step(_ body: (inout DeliverySchedule) -> [DeliverySchedule.Action]) {
        let work = state.withLock { state, outbox -> [DeliverySchedule.Action] in
            body(&state.schedule).filter { action in
                switch action {
                case .startTimer(let timer, let delay):
                    outbox.post(state.timers.start(timer, after: delay, on: clock) { [weak self] timer, generation in
                        self?.timerFired(timer, generation: generation)
                    })
                    return false
                case .cancelTimer(let timer):
                    outbox.post(state.timers.cancel(timer))
                    return false
                case .deliver, .abandon:
                    return true
                }
            }
        }
        for action in work {
            switch action {
            case .deliver(let id):
                logger.debug("delivering the message", metadata: ["peer": "\(id)"])
                let envelope = Data(self.envelope)
                // The request runs as a child of the connection manager's task scope (the callback form).
                discoverer.requestConnection(to: id, using: envelope) { [weak self] error in
                    guard let error else { return }
                    self?.logger.debug("delivery failed", metadata: ["peer": "\(id)", "error": "\(error)"])
                    self?.step { $0.finished(id) }
                }
            case .abandon(let id):
                logger.debug("delivery takes too long, giving up", metadata: ["peer": "\(id)"])
                // The disconnection runs as a child of the connection manager's task scope (the callback form).
                connections.disconnect(from: id) { [weak self] _ in
                    self?.step { $0.finished(id) }
                }
            default:
                break
            }
        }
    }

    private func timerFired(_ timer: DeliverySchedule.Timer, generation: UInt64) {
        // A timer replaced or cancelled meanwhile is stale (a late redelivery would only be early, never wrong).
        let current = state.withLock { $0.timers.fired(timer, generation: generation) }
        guard current else { return }
        step { $0.timerFired(timer) }
    }
}
