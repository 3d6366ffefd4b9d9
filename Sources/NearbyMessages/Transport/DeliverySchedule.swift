/// When a publication that scans delivers its message to the subscriptions that broadcast their interest, as a
/// value: feed it what discovery and the connections report, perform the actions it returns. It owns no clock.
///
/// One delivery runs at a time (the point-to-point strategy allows one connection). Each interested subscription
/// gets a delivery as soon as it is found and again every ``interval`` while it stays found, so that it keeps the
/// message found (it loses a message that has not been delivered again for a while). A delivery that has not ended
/// after ``watchdog`` is given up.
package struct DeliverySchedule: Sendable {
    /// What a timer is for.
    package enum Timer: Hashable, Sendable {
        /// The next delivery to the subscription is due.
        case redeliver(String)
        /// The running delivery to the subscription takes too long.
        case watchdog(String)
    }

    /// What the caller must do.
    package enum Action: Sendable, Hashable {
        /// Request a connection to the subscription with the message's envelope as endpoint info; call
        /// ``finished(_:)`` when it is rejected, disconnected or fails.
        case deliver(String)
        /// Give up the delivery (disconnect); ``finished(_:)`` follows.
        case abandon(String)
        /// Call ``timerFired(_:)`` after the duration (replacing the timer of that key).
        case startTimer(Timer, after: Duration)
        /// The timer is no longer needed.
        case cancelTimer(Timer)
    }

    /// Time between two deliveries to one subscription.
    package let interval: Duration
    /// How long one delivery may take.
    package let watchdog: Duration
    /// Whether the publication broadcasts too: subscriptions that scan then find its advertisement and get no
    /// delivery.
    package let publicationBroadcasts: Bool

    /// The interested subscriptions, each with whether a delivery to it is due.
    private var targets: [String: Bool] = [:]
    /// The subscription being delivered to.
    private(set) var active: String?
    /// How many deliveries have ended, by subscription (tests wait on it).
    private(set) var completed: [String: Int] = [:]

    /// Creates a schedule.
    package init(interval: Duration, watchdog: Duration = .seconds(30), publicationBroadcasts: Bool) {
        self.interval = interval
        self.watchdog = watchdog
        self.publicationBroadcasts = publicationBroadcasts
    }

    /// The subscriptions currently delivered to.
    package var interested: Set<String> { Set(targets.keys) }

    /// Discovery found an endpoint advertising `interest`.
    package mutating func found(_ endpoint: String, _ interest: InterestAdvertisement) -> [Action] {
        guard !(publicationBroadcasts && interest.subscriberScans), targets[endpoint] == nil else { return [] }
        targets[endpoint] = true
        return pump()
    }

    /// Discovery lost an endpoint.
    package mutating func lost(_ endpoint: String) -> [Action] {
        guard targets.removeValue(forKey: endpoint) != nil else { return [] }
        return [.cancelTimer(.redeliver(endpoint))]
    }

    /// The delivery to `endpoint` ended (rejected: the subscription took the message from the request; or
    /// disconnected after a fetch; or failed).
    package mutating func finished(_ endpoint: String) -> [Action] {
        guard active == endpoint else { return [] }
        active = nil
        completed[endpoint, default: 0] += 1
        var actions: [Action] = [.cancelTimer(.watchdog(endpoint))]
        if targets[endpoint] != nil { actions.append(.startTimer(.redeliver(endpoint), after: interval)) }
        return actions + pump()
    }

    /// A timer started by a `.startTimer` action fired.
    package mutating func timerFired(_ timer: Timer) -> [Action] {
        switch timer {
        case .redeliver(let endpoint):
            guard targets[endpoint] != nil else { return [] }
            targets[endpoint] = true
            return pump()
        case .watchdog(let endpoint):
            return active == endpoint ? [.abandon(endpoint)] : []
        }
    }

    private mutating func pump() -> [Action] {
        guard active == nil, let next = targets.first(where: { $0.value })?.key else { return [] }
        targets[next] = false
        active = next
        return [.deliver(next), .startTimer(.watchdog(next), after: watchdog)]
    }
}
