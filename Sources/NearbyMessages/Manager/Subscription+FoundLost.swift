import NearbyCore

/// The found/lost steps of a subscription: each runs a tracker step under the lock together with the timers it
/// starts or cancels (one per gone publisher and per beacon, sleeping on the manager's clock); the timers' tasks
/// are started and cancelled, and the events delivered, after the lock is released, in the order of the steps.
/// Nothing polls: a timer wakes up only at the deadline its tracker asked for.
extension Subscription {
    /// One step of the message tracker: under the lock, the step and the timers it starts or cancels (so they are
    /// decided in its order); after the lock, the timers' tasks and its events, in the order of the steps.
    func messageStep(
        _ step: (inout State, Duration) -> [FoundLostTracker<String, Message>.Action]
    ) {
        state.withLock { state, outbox in
            let events = step(&state, clock.now).compactMap { action -> MessageEvent? in
                switch action {
                case .found(let message): return MessageEvent(kind: .found, message: message)
                case .lost(let message): return MessageEvent(kind: .lost, message: message)
                case .startTimer(let id, let delay): startTimer(.message(id), after: delay, in: &state)
                case .cancelTimer(let id): state.timerWork.append(state.timers.cancel(.message(id)))
                }
                return nil
            }
            post(events, after: &state, to: &outbox)
        }
    }

    /// One step of the beacon tracker, as ``messageStep(_:)``; beacons the filter excludes are not delivered.
    func beaconStep(_ step: (inout State, Duration) -> [BeaconTracker.Action]) {
        state.withLock { state, outbox in
            let events = step(&state, clock.now).compactMap { action -> MessageEvent? in
                switch action {
                case .found(let beacon): return MessageEvent(kind: .found, message: beacon.frame.message, beacon: beacon)
                case .lost(let beacon): return MessageEvent(kind: .lost, message: beacon.frame.message, beacon: beacon)
                case .startTimer(let key, let delay): startTimer(.beacon(key), after: delay, in: &state)
                case .cancelTimer(let key): state.timerWork.append(state.timers.cancel(.beacon(key)))
                }
                return nil
            }.filter { options.filter.matches(namespace: $0.message.namespace, type: $0.message.type) }
            post(events, after: &state, to: &outbox)
        }
    }

    /// Posts the timer work a step decided, then its events.
    private func post(_ events: [MessageEvent], after state: inout State, to outbox: inout LockedOutbox<State>.Outbox) {
        let work = state.timerWork
        state.timerWork = []
        guard !work.isEmpty || !events.isEmpty else { return }
        outbox.post { [self] in
            for item in work { item() }
            for event in events { deliver(event) }
        }
    }

    private func startTimer(_ key: TimerKey, after delay: Duration, in state: inout State) {
        guard !state.stopped else { return }
        state.timerWork.append(state.timers.start(key, after: delay, on: clock) { [weak self] key, generation in
            self?.timerFired(key, generation: generation)
        })
    }

    private func timerFired(_ key: TimerKey, generation: UInt64) {
        func current(_ state: inout State) -> Bool { state.timers.fired(key, generation: generation) }
        switch key {
        case .message(let id):
            messageStep { state, now in current(&state) ? state.messages.timerFired(id, now: now) : [] }
        case .beacon(let beacon):
            beaconStep { state, now in current(&state) ? state.beacons.timerFired(beacon, now: now) : [] }
        }
    }
}
