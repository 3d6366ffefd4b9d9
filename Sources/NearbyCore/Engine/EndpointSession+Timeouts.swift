extension EndpointSession {
    /// Timeouts of the connection phases.
    public struct Timeouts: Sendable, Hashable {
        /// How long an incoming Wi-Fi LAN socket may take to send its connection request. Default: 2 s, the
        /// protocol's `kConnectionRequestReadTimeout`.
        public var connectionRequest: Duration = .seconds(2)
        /// How long an incoming BLE channel may take to send its connection request. Default: 10 s. A BLE link
        /// carries the request in 27-byte pieces at the pace of its connection events, and the requester's stack
        /// may report the channel open well after this side accepted it; on the BlueZ rig a debug build in an
        /// emulated guest missed the 2-second deadline under load (`docs/BLUEZ-VM-RIG.md`). Waiting longer only
        /// gives a slow requester more time; it changes nothing on the wire. Silent strangers' channels stay
        /// bounded by ``ResourceLimits/maxPendingEndpoints`` and ``ResourceLimits/maxPendingEndpointsPerSource``
        /// (a newcomer takes the place of the oldest pending connection).
        public var connectionRequestOverBLE: Duration = .seconds(10)
        /// How long the UKEY2 handshake may take.
        public var handshake: Duration = .seconds(15)
        /// How long after encryption went on here a plaintext KEEP_ALIVE from the peer is still tolerated (it may
        /// have sent it before reading our response, §3.6), unless an encrypted frame from the peer came first.
        /// Later plaintext drops the endpoint. Default: 3 s (the reference's decrypt-retry window).
        public var plaintextKeepAliveWindow: Duration = .seconds(3)
        /// How long the channel stays open after we rejected, so the peer reads our response.
        public var rejectedCloseDelay: Duration = .seconds(2)
        /// How long we wait after saying goodbye before closing, with a peer at `safe_to_disconnect_version` 0.
        public var disconnectDelay: Duration = .milliseconds(500)
        /// Safe-to-disconnect: how long a disconnect waits for the peer to confirm it read everything we sent
        /// (its `{request, ack}` DISCONNECTION) before closing anyway. Default: 30 s, as Google's.
        public var safeDisconnectAck: Duration = .seconds(30)
        /// Safe-to-disconnect: after we confirmed the peer's request, how long we wait for it to close the channel
        /// before closing it ourselves. Default: 10 s, as Google's.
        public var peerLeavingClose: Duration = .seconds(10)
        /// Auto-reconnect: how long an endpoint whose channel broke without a goodbye stays in the reconnecting
        /// state while a new channel is sought; zero turns auto-reconnect off. Only between swift-nearby peers
        /// that both have it on. Default: 30 s.
        public var autoReconnectWindow: Duration = .seconds(30)
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

        /// How long an incoming channel on `medium` may take to send its connection request.
        public func connectionRequest(on medium: MediumKind) -> Duration {
            switch medium {
            case .wifiLAN: connectionRequest
            case .ble: connectionRequestOverBLE
            }
        }
    }
}
