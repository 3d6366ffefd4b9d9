import NearbyCore

/// The found/lost steps of a subscription: each runs a tracker step under the lock together with the timers it
/// starts or cancels (one per gone publisher and per beacon, sleeping on the manager's clock), then delivers the
/// events. Nothing polls: a timer wakes up only at the deadline its tracker asked for.
extension Subscription {
    /// One step of the message tracker: under the lock, the step and the timers it starts or cancels (so they run
    /// in its order); then its events are delivered.
    func messageStep(
        _ step: (inout State, Duration) -> [FoundLostTracker<String, Message>.Action]
    ) {
        let (events, limitReached) = state.withLock { state -> ([MessageEvent], Bool) in
            let ignored = state.messages.ignoredSightings
            let events = step(&state, clock.now).compactMap { action -> MessageEvent? in
                switch action {
                case .found(let message): return MessageEvent(kind: .found, message: message)
                case .lost(let message): return MessageEvent(kind: .lost, message: message)
                case .startTimer(let id, let delay): startTimer(.message(id), after: delay, in: &state)
                case .cancelTimer(let id): state.timers.cancel(.message(id))
                }
                return nil
            }
            if events.contains(where: { $0.kind == .lost }) { state.atLimit = false }
            return (events, state.messages.ignoredSightings > ignored && Self.enterLimitEpisode(&state))
        }
        if limitReached { logLimitReached() }
        for event in events { deliver(event) }
    }

    /// A sighting was turned away before it reached the tracker (a fetch not started for lack of room).
    func noteLimitReached() {
        if state.withLock({ Self.enterLimitEpisode(&$0) }) { logLimitReached() }
    }

    /// Starts an episode of sightings turned away; whether it is a new one (to be logged).
    private static func enterLimitEpisode(_ state: inout State) -> Bool {
        defer { state.atLimit = true }
        return !state.atLimit
    }

    private func logLimitReached() {
        let limits = options.limits
        logger.warning(
            "a subscription is at its limits: further messages are ignored until some are lost",
            metadata: [
                "max_found_messages": "\(limits.maxFoundMessages)", "max_publishers": "\(limits.maxPublishers)",
            ])
    }

    /// One step of the beacon tracker, as ``messageStep(_:)``; beacons the filter excludes are not delivered.
    func beaconStep(_ step: (inout State, Duration) -> [BeaconTracker.Action]) {
        let events = state.withLock { state -> [MessageEvent] in
            step(&state, clock.now).compactMap { action -> MessageEvent? in
                switch action {
                case .found(let beacon): return MessageEvent(kind: .found, message: beacon.frame.message, beacon: beacon)
                case .lost(let beacon): return MessageEvent(kind: .lost, message: beacon.frame.message, beacon: beacon)
                case .startTimer(let key, let delay): startTimer(.beacon(key), after: delay, in: &state)
                case .cancelTimer(let key): state.timers.cancel(.beacon(key))
                }
                return nil
            }
        }
        for event in events {
            guard options.filter.matches(namespace: event.message.namespace, type: event.message.type) else { continue }
            deliver(event)
        }
    }

    private func startTimer(_ key: TimerKey, after delay: Duration, in state: inout State) {
        guard !state.stopped else { return }
        state.timers.start(key, after: delay, on: clock) { [weak self] key, generation in
            self?.timerFired(key, generation: generation)
        }
    }

    private func timerFired(_ key: TimerKey, generation: UInt64) {
        func current(_ state: inout State) -> Bool { state.timers.finish(key, generation: generation) }
        switch key {
        case .message(let id):
            messageStep { state, now in current(&state) ? state.messages.timerFired(id, now: now) : [] }
        case .beacon(let beacon):
            beaconStep { state, now in current(&state) ? state.beacons.timerFired(beacon, now: now) : [] }
        }
    }
}
