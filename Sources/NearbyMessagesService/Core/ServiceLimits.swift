/// What one ``MessageService`` takes at most, so that neither its clients nor the strangers whose messages it
/// reports can grow it without bound. A request beyond a limit fails with `NearbyError` `.limitExceeded`; a
/// connection beyond ``maxClients`` gets that error as its only line and is closed.
public struct ServiceLimits: Sendable, Hashable {
    /// The most clients connected at once (``MessageServiceServer`` connections). Default 32.
    public var maxClients: Int = 32
    /// The most publications and subscriptions running at once, background ones included. Default 64.
    public var maxItems: Int = 64
    /// The most service IDs in use at once (each has a `MessageManager`, released when its last item stops).
    /// Default 16.
    public var maxServiceIDs: Int = 16
    /// Desktop notifications: at most this many at once after a quiet time … Default 5.
    public var notificationBurst: Int = 5
    /// … then at most one per this many seconds; the others are dropped (and counted in the log). Default 1.
    public var notificationInterval: Double = 1

    /// The defaults.
    public init() {}
}

/// A token bucket for desktop notifications: ``ServiceLimits/notificationBurst`` tokens, one more every
/// ``ServiceLimits/notificationInterval`` seconds.
struct NotificationRateLimit: Sendable {
    private let burst: Double
    private let interval: Double
    private var tokens: Double
    private var last: Double?
    /// Notifications dropped since the last one shown.
    private(set) var dropped = 0

    init(burst: Int, interval: Double) {
        self.burst = Double(max(1, burst))
        self.interval = max(0.001, interval)
        tokens = self.burst
    }

    /// Whether a notification may be shown at `now` (seconds on any monotonic scale); takes a token when it may.
    mutating func admit(now: Double) -> Bool {
        if let last, now > last { tokens = min(burst, tokens + (now - last) / interval) }
        last = max(last ?? now, now)
        guard tokens >= 1 else {
            dropped += 1
            return false
        }
        tokens -= 1
        dropped = 0
        return true
    }
}
