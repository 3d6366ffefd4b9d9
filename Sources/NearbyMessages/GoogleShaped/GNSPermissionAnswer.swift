import NearbyCore

/// The answer to one Google-shaped permission request. The app's handler may call back late, more than once, or
/// never: the first answer counts, later ones are ignored, and the handle's release answers "no" so that its start
/// does not wait for good (a second call of a checked continuation would have crashed the process).
final class GNSPermissionAnswer: Sendable {
    private let state = LockedValue<(answer: Bool?, waiter: CheckedContinuation<Bool, Never>?)>((nil, nil))

    /// The first answer given, once there is one.
    func wait() async -> Bool {
        await withCheckedContinuation { waiter in
            let answer = state.withLock { state -> Bool? in
                if state.answer == nil { state.waiter = waiter }
                return state.answer
            }
            if let answer { waiter.resume(returning: answer) }
        }
    }

    /// Answers the request; only the first answer counts.
    func give(_ granted: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.answer == nil else { return nil }
            state.answer = granted
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: granted)
    }
}
