extension EndpointSession {
    /// Timeouts of the connection phases.
    public struct Timeouts: Sendable, Hashable {
        /// How long an incoming socket may take to send its connection request.
        public var connectionRequest: Duration = .seconds(2)
        /// How long the UKEY2 handshake may take.
        public var handshake: Duration = .seconds(15)
        /// How long after encryption went on here a plaintext KEEP_ALIVE from the peer is still tolerated (it may
        /// have sent it before reading our response, §3.6), unless an encrypted frame from the peer came first.
        /// Later plaintext drops the endpoint. Default: 3 s (the reference's decrypt-retry window).
        public var plaintextKeepAliveWindow: Duration = .seconds(3)
        /// How long the channel stays open after we rejected, so the peer reads our response.
        public var rejectedCloseDelay: Duration = .seconds(2)
        /// How long we wait after saying goodbye before closing.
        public var disconnectDelay: Duration = .milliseconds(500)
        /// How long frames already queued may take to reach the socket when the connection ends, before the
        /// channel is closed under them. Kept short so that ``EndpointSession/disconnect()`` returns within 5 s even
        /// when the peer stopped reading.
        public var drainBeforeClose: Duration = .seconds(2)
        /// Bandwidth upgrade, offering side: how long the peer may take to open and introduce the new channel.
        public var upgradeChannel: Duration = .seconds(15)
        /// Bandwidth upgrade, offering side: how long to stay on the first medium after both accepted before
        /// offering the upgrade (zero: at once, as peers do).
        public var upgradeDelay: Duration = .zero
        /// Bandwidth upgrade, offering side: the wait before offering again after an upgrade failed; it doubles
        /// after each failure up to ``upgradeRetryMax`` (peers use 3 s to 300 s).
        public var upgradeRetry: Duration = .seconds(3)
        /// Bandwidth upgrade, offering side: the longest wait between offers.
        public var upgradeRetryMax: Duration = .seconds(300)
        /// Bandwidth upgrade: how long the CLIENT_INTRODUCTION and its ack may take on the new channel.
        public var clientIntroduction: Duration = .seconds(5)
        /// Bandwidth upgrade: how long the one read of the peer's goodbye on the old channel may take.
        public var priorChannelGoodbye: Duration = .seconds(2)
        /// Bandwidth upgrade: how long the old channel may take to drain (from our LAST_WRITE to the peer's
        /// SAFE_TO_CLOSE) before the connection is ended; writes are held meanwhile.
        public var upgradeDrain: Duration = .seconds(15)

        /// The protocol's defaults.
        public init() {}
    }
}
