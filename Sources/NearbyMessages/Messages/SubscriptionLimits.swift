/// What one subscription holds at most, whatever nearby devices (or anyone on the radio) show it: the bounds of
/// its memory and of the work a flood of spoofed sightings can cause. A sighting beyond a limit is ignored (and
/// logged once per episode) until a loss makes room; what is already found stays found.
///
/// With the defaults a subscription holds at most about 16 MiB of message content: 128 found messages of at most
/// 100 KiB, and 32 fetched large messages kept for re-use (the found ones among them are the same bytes).
public struct SubscriptionLimits: Sendable, Hashable {
    /// The most distinct messages found at once (beacon messages are counted by ``maxTrackedBeacons``). Default 128.
    public var maxFoundMessages: Int = 128
    /// The most publishers (advertising endpoints and deliveries) tracked at once. Default 1,024.
    public var maxPublishers: Int = 1_024
    /// The most large messages kept after they were fetched, so that another publisher of the same message (or the
    /// same one coming back) does not need a new fetch; the least recently used goes first. Default 32.
    public var maxCachedMessages: Int = 32
    /// The most beacons (an address and a message) tracked at once. Default 1,024.
    public var maxTrackedBeacons: Int = 1_024

    /// The defaults.
    public init() {}
}
