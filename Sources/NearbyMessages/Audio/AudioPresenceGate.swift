import NearbyCore

/// The rule of a subscription whose only medium is audio, as a value-type state machine: a publication found over
/// Wi-Fi LAN or BLE counts as present only while its audio token is heard.
///
/// Feed it what discovery finds (``advertised(_:token:)``, ``offer(_:_:now:)``, ``endpointGone(_:)``), what the
/// microphone hears (``heard(_:now:)``) and timer expiries; perform the actions. A token stays audible until it
/// has not been heard for ``audibleFor`` (one timer per audible token, from a `LostEndpointTracker`).
package struct AudioPresenceGate: Sendable {
    /// What the caller must do.
    package enum Action: Sendable, Hashable {
        /// The endpoint's message is present (it is heard and known).
        case present(String, Message)
        /// The endpoint is no longer heard.
        case gone(String)
        /// Call ``timerFired(_:now:)`` for the token after the duration.
        case startTimer(AudioToken, after: Duration)
    }

    /// How long a token stays audible after it was last heard.
    package var audibleFor: Duration { silence.timeout }

    /// Per endpoint: the token its advertisement carries, and its message once known (fetched ones come later).
    private var endpoints: [String: (token: AudioToken, message: Message?)] = [:]
    private var silence: LostEndpointTracker<AudioToken>

    /// Creates a gate whose tokens stay audible `audibleFor` after they were last heard.
    package init(audibleFor: Duration) {
        silence = LostEndpointTracker(timeout: audibleFor)
    }

    /// The tokens heard within ``audibleFor``.
    package var audibleTokens: Set<AudioToken> { silence.trackedKeys }

    /// Discovery found endpoint `id` advertising `token` (`nil`: it does not play a token, so it is never heard).
    package mutating func advertised(_ id: String, token: AudioToken?) -> [Action] {
        guard let token else {
            return endpoints.removeValue(forKey: id) == nil ? [] : [.gone(id)]
        }
        let previous = endpoints[id]
        let kept = previous?.token == token ? previous?.message : nil
        endpoints[id] = (token, kept)
        return previous.map { $0.token != token && $0.message != nil } == true ? [.gone(id)] : []
    }

    /// The subscription knows endpoint `id`'s message: present it now if its token is audible, otherwise when it is.
    package mutating func offer(_ id: String, _ message: Message, now: Duration) -> [Action] {
        guard let token = endpoints[id]?.token else { return [] }
        endpoints[id]?.message = message
        return silence.isTracking(token) ? [.present(id, message)] : []
    }

    /// Discovery lost endpoint `id`.
    package mutating func endpointGone(_ id: String) -> [Action] {
        endpoints.removeValue(forKey: id) == nil ? [] : [.gone(id)]
    }

    /// The microphone heard `token` at `now`.
    package mutating func heard(_ token: AudioToken, now: Duration) -> [Action] {
        let wasAudible = silence.isTracking(token)
        var actions: [Action] = []
        if case .startTimer(let key, let delay)? = silence.seen(token, now: now) {
            actions.append(.startTimer(key, after: delay))
        }
        if !wasAudible {
            for (id, entry) in endpoints.sorted(by: { $0.key < $1.key }) where entry.token == token {
                if let message = entry.message { actions.append(.present(id, message)) }
            }
        }
        return actions
    }

    /// The timer of `token` fired at `now`: the token's endpoints are gone if it has been silent for ``audibleFor``.
    package mutating func timerFired(_ token: AudioToken, now: Duration) -> [Action] {
        switch silence.timerFired(token, now: now) {
        case nil:
            return []
        case .startTimer(let key, let delay):
            return [.startTimer(key, after: delay)]
        case .lost:
            return endpoints.sorted(by: { $0.key < $1.key }).filter { $0.value.token == token && $0.value.message != nil }
                .map { .gone($0.key) }
        }
    }
}
