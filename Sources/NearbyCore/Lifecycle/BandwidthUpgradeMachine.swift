import NearbyWire

/// The bandwidth upgrade of one connected endpoint (protocol reference §9.4), as a value type that returns actions.
///
/// The advertiser side (the session that accepted the socket) is the ``Role/initiator``: it listens on the new
/// medium and offers the path. The discoverer side is the ``Role/responder``: it connects to the offered path. Both
/// sides then move the connection the same way:
///
/// 1. When the new channel is ready (introduction and its ack exchanged in plaintext on it), write
///    LAST_WRITE_TO_PRIOR_CHANNEL on the old channel and hold every later frame (``Action/holdWritesAfter(_:)``).
/// 2. Once both our LAST_WRITE is out and the peer's has arrived, write SAFE_TO_CLOSE_PRIOR_CHANNEL on the old
///    channel (``Action/sendOnPriorChannel(_:)``). Never earlier: the peer stops reading the old channel at our
///    SAFE_TO_CLOSE, so a LAST_WRITE after it would be lost and its sequence number would break the D2D context.
/// 3. On the peer's SAFE_TO_CLOSE, the peer has written everything it will write on the old channel: read and write
///    on the new channel from now on, releasing the held frames (``Action/switchChannels``).
///
/// The D2D context continues across both channels, so sequence numbers stay in order. A failure before step 1
/// leaves the connection on the old channel (the initiator may offer again later); a broken protocol after it ends
/// the connection.
public struct BandwidthUpgradeMachine: Sendable {
    /// Which side of the upgrade this is.
    public enum Role: Sendable, Hashable {
        /// The advertiser side: listens on the new medium and offers it.
        case initiator
        /// The discoverer side: connects to the offered path.
        case responder
    }

    /// Where the upgrade stands.
    public enum Phase: Sendable, Hashable {
        /// No upgrade has started.
        case idle
        /// Initiator: the offer is out; waiting for the peer's new channel.
        case offered
        /// Responder: connecting to the offered path.
        case connecting
        /// Our LAST_WRITE is out and later frames are held; reading the old channel until the peer's
        /// SAFE_TO_CLOSE. `sentSafeToClose` says whether our SAFE_TO_CLOSE is out too.
        case draining(sentSafeToClose: Bool)
        /// The connection runs over the new channel.
        case upgraded
        /// The upgrade was given up; the connection stays on its channel. The initiator may offer again.
        case abandoned
    }

    /// Something the session must do.
    public enum Action: Sendable {
        /// Responder: connect to this path, introduce ourselves, then call ``newChannelReady()`` or
        /// ``newChannelFailed(_:)``.
        case connect(UpgradePathInfo)
        /// Send this frame (encrypted) on the channel in use, as any other frame.
        case send(ProtoOfflineFrame)
        /// Send this frame (LAST_WRITE, encrypted) on the old channel, then hold every later frame until
        /// ``switchChannels``.
        case holdWritesAfter(ProtoOfflineFrame)
        /// Send this frame (SAFE_TO_CLOSE, encrypted) on the old channel while other frames are held.
        case sendOnPriorChannel(ProtoOfflineFrame)
        /// Read and write on the new channel from now on, writing the held frames first; say goodbye on the old
        /// channel in plaintext and close it; report the new medium.
        case switchChannels
        /// Stop waiting for or close the new channel; the connection stays where it is.
        case abandon(NearbyError)
        /// The peer broke the upgrade protocol after the switch began: end the connection.
        case fail(NearbyError)
    }

    /// Which side this is.
    public let role: Role
    /// Where the upgrade stands.
    public private(set) var phase: Phase = .idle
    private var peerLastWrite = false
    private var offeredPath: UpgradePathInfo?

    /// Creates the machine for one connection.
    public init(role: Role) {
        self.role = role
    }

    /// Initiator: the offer for `path` is about to be sent (first or again after a failure). Returns the frame to
    /// send, or `nil` when an upgrade is under way or done (or this is the responder).
    public mutating func offer(_ path: UpgradePathInfo) -> ProtoOfflineFrame? {
        guard role == .initiator, phase == .idle || phase == .abandoned else { return nil }
        phase = .offered
        peerLastWrite = false
        offeredPath = path
        return OfflineFrames.upgradePathAvailable(path)
    }

    /// Handles a bandwidth upgrade frame read on the current channel. `canConnect` says whether this side has a
    /// medium for an offered path.
    public mutating func receive(
        _ frame: ProtoBandwidthUpgradeNegotiationFrame, canConnect: (UpgradePathInfo) -> Bool
    ) -> [Action] {
        switch frame.eventType {
        case .upgradePathAvailable:
            let path = frame.upgradePathInfo
            // An advertiser ignores offers from its discoverer (no dynamic role switch), as peers do.
            guard role == .responder else { return [] }
            guard phase == .idle || phase == .abandoned, canConnect(path) else {
                return [.send(OfflineFrames.upgradeFailure(path))]
            }
            phase = .connecting
            offeredPath = path
            return [.connect(path)]
        case .upgradeFailure:
            guard role == .initiator, phase == .offered else { return [] }
            phase = .abandoned
            return [.abandon(NearbyError(.mediumUnavailable, "the peer could not use the offered upgrade path"))]
        case .lastWriteToPriorChannel:
            switch phase {
            case .draining(sentSafeToClose: false):
                phase = .draining(sentSafeToClose: true)
                return [.sendOnPriorChannel(OfflineFrames.safeToClosePriorChannel())]
            case .offered, .connecting:
                // Our own LAST_WRITE is not out yet; SAFE_TO_CLOSE follows it.
                peerLastWrite = true
                return []
            default:
                return [.fail(NearbyError(.invalidFrame, "LAST_WRITE_TO_PRIOR_CHANNEL outside an upgrade"))]
            }
        case .safeToClosePriorChannel:
            guard case .draining(sentSafeToClose: true) = phase else {
                return [.fail(NearbyError(.invalidFrame, "SAFE_TO_CLOSE_PRIOR_CHANNEL before LAST_WRITE_TO_PRIOR_CHANNEL"))]
            }
            phase = .upgraded
            return [.switchChannels]
        default:
            // Introductions belong on the new channel; requests are for dynamic role switch, which is off.
            return []
        }
    }

    /// The new channel is connected and introduced: start draining the old one.
    public mutating func newChannelReady() -> [Action] {
        guard phase == .offered || phase == .connecting else { return [] }
        var actions: [Action] = [.holdWritesAfter(OfflineFrames.lastWriteToPriorChannel())]
        if peerLastWrite {
            actions.append(.sendOnPriorChannel(OfflineFrames.safeToClosePriorChannel()))
            phase = .draining(sentSafeToClose: true)
        } else {
            phase = .draining(sentSafeToClose: false)
        }
        return actions
    }

    /// The new channel could not be set up. The responder tells the peer; both stay on the old channel.
    public mutating func newChannelFailed(_ error: NearbyError) -> [Action] {
        guard phase == .offered || phase == .connecting else { return [] }
        phase = .abandoned
        var actions: [Action] = []
        if role == .responder, let path = offeredPath {
            actions.append(.send(OfflineFrames.upgradeFailure(path)))
        }
        actions.append(.abandon(error))
        return actions
    }

    /// Initiator: no offer could be made this time (no usable address, say); a later one may be.
    public mutating func cannotOffer() {
        if role == .initiator, phase == .idle { phase = .abandoned }
    }

    /// Whether frames are being held for the new channel.
    public var isDraining: Bool {
        if case .draining = phase { return true }
        return false
    }
}
