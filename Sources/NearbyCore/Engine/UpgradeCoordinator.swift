import Logging
import NearbyWire

/// What an ``UpgradeCoordinator`` needs from the session whose connection it moves.
protocol UpgradeHost: Actor {
    /// Whether both sides accepted and the session goes on.
    var isConnected: Bool { get }
    /// The medium the connection runs over now.
    var medium: MediumKind { get }
    /// The peer's endpoint ID, once known.
    var endpointID: String? { get }
    /// The mediums the peer said it can upgrade to.
    var peerUpgradeMediums: [MediumKind] { get }
    /// The upgrade failed in a way that ends the connection.
    func upgradeFailed(_ error: NearbyError) async
    /// Read from `channel` from now on (the writer was switched already) and report the new medium; returns the
    /// channel read from until now.
    func adoptUpgradedChannel(_ channel: any EndpointChannel) async -> any EndpointChannel
}

/// Bandwidth upgrade (protocol reference §9.4): moves a connected endpoint to a faster medium.
///
/// The decisions are the ``BandwidthUpgradeMachine``'s; the coordinator owns it and every upgrade resource (the
/// listener and the new channel's introduction, the writer's hold and channel switch, the goodbye on the old
/// channel, the offer's retry and the drain deadline on the session's clock). The session hands it the peer's
/// negotiation frames and learns of the new channel through ``UpgradeHost``.
actor UpgradeCoordinator {
    enum Timer: Hashable, Sendable {
        /// The next offer (after the delay or a retry's wait).
        case offer
        /// The old channel must have drained by then.
        case drain
    }

    private var machine: BandwidthUpgradeMachine
    private weak var host: (any UpgradeHost)?
    private let writer: OutboundFrameWriter
    private let gate: SendGate
    /// Mediums the connection may move to (they support upgrade listening).
    private let mediums: [any MediumDriver]
    private let autoUpgrade: Bool
    private let localEndpointID: String
    private let timeouts: EndpointSession.Timeouts
    private let clock: NearbyClock
    private let timers: SessionTimers<Timer>
    private var logger: Logger
    /// The offering side's listener while it waits for the new channel.
    private var listener: (any UpgradeListener)?
    /// Where the listener hands over accepted channels to have their introduction read.
    private var arrivals: UpgradeIntroductions?
    /// The new channel while the old one drains.
    private var pendingChannel: (any EndpointChannel)?
    /// Upgrade frames for the writer, in the order the machine asked for them.
    private var writeTail: Task<Void, Never>?
    /// The wait before the last retried offer, doubled for the next.
    private var retryDelay: Duration?
    private let drainingNow = LockedValue(false)
    private let stopped = LockedValue(false)

    init(
        role: BandwidthUpgradeMachine.Role, writer: OutboundFrameWriter, gate: SendGate, mediums: [any MediumDriver],
        autoUpgrade: Bool, localEndpointID: String, timeouts: EndpointSession.Timeouts, clock: NearbyClock,
        logger: Logger
    ) {
        machine = BandwidthUpgradeMachine(role: role)
        self.writer = writer
        self.gate = gate
        self.mediums = mediums
        self.autoUpgrade = autoUpgrade
        self.localEndpointID = localEndpointID
        self.timeouts = timeouts
        self.clock = clock
        timers = SessionTimers(clock: clock)
        self.logger = logger
    }

    /// Whether the old channel drains (keep-alives are held back meanwhile).
    nonisolated var isDraining: Bool { drainingNow.withLock { $0 } }

    private var isStopped: Bool { stopped.withLock { $0 } }

    /// Both sides accepted: the advertiser side offers (after ``EndpointSession/Timeouts/upgradeDelay``) the first
    /// upgrade medium the peer listed that is not the current one.
    func connected(host: any UpgradeHost, logger: Logger) async {
        self.host = host
        self.logger = logger
        guard autoUpgrade, machine.role == .initiator, machine.phase == .idle, await target() != nil else { return }
        scheduleOffer(after: timeouts.upgradeDelay)
    }

    /// A BANDWIDTH_UPGRADE_NEGOTIATION frame from the peer.
    func receive(_ negotiation: ProtoBandwidthUpgradeNegotiationFrame, host: any UpgradeHost) async {
        self.host = host
        let current = await host.medium
        let mediums = self.mediums
        await perform(machine.receive(negotiation) { path in
            guard let kind = MediumKind(upgradePath: path.medium), kind != current else { return false }
            return mediums.contains { $0.kind == kind }
        })
    }

    /// The session ended: no more offers or deadlines; every upgrade resource is released by ``release()``.
    nonisolated func stop() {
        stopped.withLock { $0 = true }
        timers.stop()
    }

    /// Closes the listener and a new channel not switched to yet (after ``stop()``).
    func release() async {
        arrivals?.finish()
        arrivals = nil
        let listener = self.listener
        self.listener = nil
        let pending = pendingChannel
        pendingChannel = nil
        await listener?.stop()
        await pending?.close()
    }

    // MARK: - Offering

    private func target() async -> (any MediumDriver)? {
        guard let host else { return nil }
        let current = await host.medium
        let wanted = await host.peerUpgradeMediums
        return mediums.first { $0.kind != current && wanted.contains($0.kind) }
    }

    private func scheduleOffer(after delay: Duration) {
        timers.schedule(.offer, after: delay) { [weak self] generation in
            await self?.offerIfStillWanted(generation)
        }
    }

    private func offerIfStillWanted(_ generation: UInt64) async {
        guard timers.claim(.offer, generation: generation), !isStopped, await host?.isConnected == true,
            let target = await target()
        else { return }
        await offer(using: target)
    }

    /// After a failed offer: offers again later, waiting twice as long each time (up to the maximum), as peers do.
    private func scheduleRetry() {
        guard !isStopped, machine.phase == .abandoned else { return }
        let delay = min(retryDelay.map { $0 * 2 } ?? timeouts.upgradeRetry, timeouts.upgradeRetryMax)
        retryDelay = delay
        logger.debug("offering the bandwidth upgrade again later", metadata: ["delay": "\(delay)"])
        scheduleOffer(after: delay)
    }

    /// Initiator: listens on `medium`, offers it, and waits for the peer's introduced channel. Every accepted
    /// channel's introduction is read at the same time as the others' (``UpgradeIntroductions``), so strangers on
    /// the listener cannot hold the peer's channel back.
    private func offer(using medium: any MediumDriver) async {
        let introductions = UpgradeIntroductions(
            endpointID: await host?.endpointID ?? "", timeout: timeouts.clientIntroduction, clock: clock, logger: logger)
        let listener: any UpgradeListener
        do {
            listener = try await medium.startUpgradeListener { introductions.accept($0) }
        } catch {
            introductions.finish()
            logger.notice("not offering a bandwidth upgrade now", metadata: ["to": "\(medium.kind)", "error": "\(error)"])
            machine.cannotOffer()
            scheduleRetry()
            return
        }
        guard !isStopped, let offer = machine.offer(listener.pathInfo) else {
            introductions.finish()
            await listener.stop()
            return
        }
        self.listener = listener
        arrivals = introductions
        logger.info("offering a bandwidth upgrade", metadata: ["to": "\(medium.kind)"])
        await writer.enqueue(writer.item(offer))
        let wait = timeouts.upgradeChannel
        let clock = self.clock
        // Owner: this call, which cancels it when it returns; it ends when its sleep ends or is cancelled (then it
        // finishes the introductions, which are finished already by every way out of the loop below).
        let timer = Task {
            try? await clock.sleep(for: wait)
            introductions.finish()
        }
        defer { timer.cancel() }
        for await introduced in introductions.introduced {
            guard introductions.claim(introduced) else { continue }
            let candidate = introduced.channel
            do {
                try await candidate.writeFrame(OfflineFrames.serialize(OfflineFrames.clientIntroductionAck()))
            } catch {
                logger.notice("acknowledging the upgrade channel failed", metadata: ["error": "\(error)"])
                await candidate.close()
                continue
            }
            introductions.finish()
            await stopListener()
            guard !isStopped else {
                await candidate.close()
                return
            }
            await perform(machine.newChannelReady(), newChannel: candidate)
            return
        }
        await stopListener()
        await perform(machine.newChannelFailed(NearbyError(
            .timeout, "the peer did not open the upgraded channel within \(wait)")))
        scheduleRetry()
    }

    private func stopListener() async {
        let listener = self.listener
        self.listener = nil
        arrivals = nil
        await listener?.stop()
    }

    // MARK: - Taking an offer

    /// Responder: connects to the offered path, introduces us, and waits for the ack.
    private func connect(to path: UpgradePathInfo) async {
        guard let kind = MediumKind(upgradePath: path.medium), let medium = mediums.first(where: { $0.kind == kind })
        else {
            await perform(machine.newChannelFailed(NearbyError(.mediumUnavailable, "no medium for the upgrade path")))
            return
        }
        logger.info("taking a bandwidth upgrade", metadata: ["to": "\(kind)"])
        let channel: any EndpointChannel
        do {
            channel = try await medium.connectForUpgrade(to: path)
        } catch {
            await perform(machine.newChannelFailed(EndpointSession.nearbyError(error, "connecting for the upgrade failed")))
            return
        }
        do {
            let introduction = OfflineFrames.clientIntroduction(endpointID: localEndpointID, lastEndpointID: localEndpointID)
            try await channel.writeFrame(OfflineFrames.serialize(introduction))
            if path.supportsClientIntroductionAck {
                let body = try await channel.readFirstFrame(within: timeouts.clientIntroduction, clock: clock)
                guard case .bandwidthUpgradeNegotiation(let ack) = try OfflineFrameParser.parse(body),
                    ack.eventType == .clientIntroductionAck
                else {
                    throw NearbyError(.invalidFrame, "expected CLIENT_INTRODUCTION_ACK on the upgraded channel")
                }
            }
        } catch {
            await channel.close()
            await perform(machine.newChannelFailed(EndpointSession.nearbyError(error, "introducing the upgraded channel failed")))
            return
        }
        guard !isStopped else {
            await channel.close()
            return
        }
        await perform(machine.newChannelReady(), newChannel: channel)
    }

    // MARK: - Actions

    /// Performs the machine's actions. `newChannel` is the introduced channel when the actions come from
    /// ``BandwidthUpgradeMachine/newChannelReady()``; it is closed when the machine did not take it.
    private func perform(_ actions: [BandwidthUpgradeMachine.Action], newChannel: (any EndpointChannel)? = nil) async {
        drainingNow.withLock { $0 = machine.isDraining }
        var taken = false
        for action in actions where !isStopped {
            switch action {
            case .connect(let path):
                // Owner: none (it holds this coordinator until it ends); it ends once the connect (the medium's
                // connect timeout) and the introduction (`Timeouts.clientIntroduction`) ended; after `stop()` it
                // closes the new channel and performs nothing.
                Task { await self.connect(to: path) }
            case .send(let frame):
                await writer.enqueue(writer.item(frame))
            case .holdWritesAfter(let lastWrite):
                taken = true
                pendingChannel = newChannel
                gate.close()
                timers.schedule(.drain, after: timeouts.upgradeDrain) { [weak self] generation in
                    await self?.drainExpired(generation)
                }
                logger.debug("upgraded channel ready; draining the prior channel")
                // Queued in this order before anything else can run on this actor (no await in between): a peer's
                // SAFE_TO_CLOSE read while we waited here would queue the switch between our LAST_WRITE and our
                // SAFE_TO_CLOSE, and SAFE_TO_CLOSE would go out on the new channel (BlueZ rig test l saw it).
                chainWrite(.holdAfter(lastWrite))
            case .sendOnPriorChannel(let safeToClose):
                chainWrite(.priority(safeToClose))
            case .switchChannels:
                await switchChannels()
            case .abandon(let error):
                logger.notice("bandwidth upgrade abandoned; staying on the current medium", metadata: ["error": "\(error)"])
                arrivals?.finish()
            case .fail(let error):
                await host?.upgradeFailed(error)
            }
        }
        if !taken, let newChannel { await newChannel.close() }
    }

    private func drainExpired(_ generation: UInt64) async {
        guard timers.claim(.drain, generation: generation), !isStopped else { return }
        await host?.upgradeFailed(NearbyError(
            .timeout, "the peer did not finish the bandwidth upgrade within \(timeouts.upgradeDrain)"))
    }

    /// Queues an upgrade frame for the writer behind the previous one, so the writer sees LAST_WRITE,
    /// SAFE_TO_CLOSE and the switch in the order the machine decided them. The order is fixed when this returns
    /// (synchronously, on the actor); the returned task ends once the writer has taken the item, that is, once
    /// every item before it was written.
    @discardableResult
    private func chainWrite(_ item: OutboundFrameWriter.Item) -> Task<Void, Never> {
        let previous = writeTail
        let writer = self.writer
        // Owner: `writeTail` (the next chained write awaits it; `switchChannels()` awaits the switch's); it ends once
        // the writer took the item, or at once when the writer has finished (the item is then dropped).
        let task = Task {
            await previous?.value
            await writer.enqueue(item)
        }
        writeTail = task
        return task
    }

    /// The peer's SAFE_TO_CLOSE arrived: read and write on the new channel, say goodbye on the old one.
    private func switchChannels() async {
        guard let next = pendingChannel, let host else {
            await self.host?.upgradeFailed(NearbyError(.invalidFrame, "SAFE_TO_CLOSE_PRIOR_CHANNEL without an upgraded channel"))
            return
        }
        pendingChannel = nil
        timers.cancel(.drain)
        // Once the writer takes the switch, our LAST_WRITE and SAFE_TO_CLOSE are written on the prior channel, so
        // the goodbye below follows them there.
        await chainWrite(.switchChannel(next)).value
        let prior = await host.adoptUpgradedChannel(next)
        gate.open()
        logger[metadataKey: "medium"] = "\(next.medium)"
        logger[metadataKey: "peer"] = "\(next.peerDescription)"
        let goodbyeWait = timeouts.priorChannelGoodbye
        let clock = self.clock
        // Owner: none (the session works on the new channel meanwhile); it ends within `priorChannelGoodbye`, when
        // the prior channel is closed: the write and the read together get that long, so a peer that neither reads
        // nor writes on the prior channel cannot hold it (a goodbye write stuck on a full buffer once could).
        Task {
            // Plaintext, so the D2D sequence numbers do not move; then one read so the peer has time to read our
            // SAFE_TO_CLOSE before the channel goes.
            _ = try? await prior.closing(after: goodbyeWait, clock: clock) {
                try await prior.writeFrame(OfflineFrames.serialize(OfflineFrames.disconnection()))
                return try await prior.readFrame()
            }
            await prior.close()
        }
    }
}
