/// Every limit that bounds what a peer can make this process do: memory, disk, open payloads, endpoints and time.
///
/// A peer that crosses a limit gets a clear `NearbyError`: the payload concerned fails on both sides
/// (and its partial file is deleted), or the endpoint is dropped; other endpoints and data already received are
/// unaffected. The defaults suit a file-drop tool on an open network; each can be changed through
/// ``EngineConfiguration/limits`` (and `ConnectionOptions.limits` in the public API).
public struct ResourceLimits: Sendable, Hashable {
    /// The most bytes of FILE and STREAM payloads one connection may receive in total (payloads of unknown size
    /// included); a payload that would cross it fails. Default: 64 GiB.
    public var maxReceivedBytesPerConnection: Int64 = 64 << 30
    /// The free space that must remain on the receive directory's file system; a file that would leave less fails.
    /// Default: 64 MiB.
    public var minimumFreeDiskSpace: Int64 = 64 << 20
    /// The most incoming payloads (of all kinds) one endpoint may have open at once; one more is a protocol
    /// violation that drops the endpoint. Default: 64.
    public var maxConcurrentIncomingPayloads: Int = 64
    /// The most bytes of incoming BYTES payloads one endpoint may have buffered in memory at once (each open BYTES
    /// payload counts its announced size, at most 1 MiB, from its first chunk until it is delivered or ends); a
    /// payload that would cross it fails at its first chunk (PAYLOAD_ERROR to the peer, a failure update) and the
    /// endpoint stays connected. Default: 16 MiB.
    public var maxBufferedBytesPerEndpoint: Int64 = 16 << 20
    /// The most bytes of incoming BYTES payloads all endpoints of one engine may have buffered in memory at once,
    /// counted the same way; a payload that would cross it fails the same way. Default: 128 MiB.
    public var maxBufferedBytes: Int64 = 128 << 20
    /// The most endpoints (connections in any phase) the engine holds at once; a further incoming one takes the
    /// place of a pending incoming connection as for ``maxPendingEndpoints``, or is refused when none is pending.
    /// Default: 128.
    public var maxEndpoints: Int = 128
    /// The most endpoints the engine holds that are not yet connected (handshaking or awaiting a decision);
    /// a further incoming one takes the place of the longest-waiting pending incoming connection of the busiest
    /// peer address (see ``maxPendingEndpointsPerSource``). Default: 128, as many as ``maxEndpoints``, so a hub takes a room full of
    /// devices that all ask at once (Google's engine has no such limit; here it still bounds handshakes in flight
    /// when ``maxEndpoints`` is raised).
    public var maxPendingEndpoints: Int = 128
    /// The most pending incoming connections from one peer address (a TCP peer's IP, a BLE address); a further one
    /// from it takes the place of its own longest-waiting one. Default: 128 (a hub's spokes may all come from one
    /// address behind a NAT). Whatever its value,
    /// a full table never locks a newcomer out: it takes the place of the longest-waiting pending incoming
    /// connection of the address that holds the most.
    public var maxPendingEndpointsPerSource: Int = 128
    /// How long a connection may wait for both sides' accept or reject before it is rejected. Default: 60 s.
    public var pendingDecisionTimeout: Duration = .seconds(60)
    /// The keep-alive timeout a peer may ask for is clamped into this range. Default: 1 s to 300 s.
    public var peerKeepAliveTimeoutRange: ClosedRange<Duration> = .seconds(1) ... .seconds(300)
    /// The longest one write to a peer may take before the endpoint is dropped as stalled. `nil`: the connection's
    /// keep-alive timeout. Default: `nil`.
    public var writeTimeout: Duration? = nil
    /// The most events an event stream (`NearbyEngine/events`, `ConnectionManager.events`) buffers for a
    /// consumer that does not keep up; beyond it the oldest buffered events are dropped and a warning is logged.
    /// Default: 65,536.
    public var maxBufferedEvents: Int = 65_536

    /// The defaults.
    public init() {}
}
