import Logging
import NearbyWire

/// Bandwidth upgrade (protocol reference §9.4): moving a connected endpoint to a faster medium.
///
/// The decisions are the ``BandwidthUpgradeMachine``'s; this extension does the I/O: the listener and the new
/// channel's plaintext introduction, the writer's hold and channel switch, the goodbye on the old channel.
extension EndpointSession {
    // MARK: - Starting

    /// Advertiser side, right after both accepted: offers (after ``Timeouts/upgradeDelay``) the first upgrade
    /// medium the peer listed that is not the current one.
    func startUpgradeIfWanted() {
        guard autoUpgrade, upgrade.role == .initiator, upgrade.phase == .idle, upgradeTarget() != nil else { return }
        scheduleUpgradeOffer(after: timeouts.upgradeDelay)
    }

    private func upgradeTarget() -> (any Medium)? {
        let current = readChannel.medium
        let wanted = machine.peerUpgradeMediums
        return upgradeMediums.first { $0.kind != current && wanted.contains($0.kind) }
    }

    private func scheduleUpgradeOffer(after delay: Duration) {
        upgradeOfferTask?.cancel()
        upgradeOfferTask = Task {
            if delay > .zero {
                do { try await Task.sleep(for: delay) } catch { return }
            }
            await self.offerUpgradeIfStillWanted()
        }
    }

    private func offerUpgradeIfStillWanted() async {
        guard !ended, machine.isConnected, let target = upgradeTarget() else { return }
        await offerUpgrade(using: target)
    }

    /// After a failed offer: offers again later, waiting twice as long each time (up to the maximum), as peers do.
    private func scheduleUpgradeRetry() {
        guard !ended, upgrade.phase == .abandoned else { return }
        let delay = min(upgradeRetryDelay.map { $0 * 2 } ?? timeouts.upgradeRetry, timeouts.upgradeRetryMax)
        upgradeRetryDelay = delay
        logger.debug("offering the bandwidth upgrade again later", metadata: ["delay": "\(delay)"])
        scheduleUpgradeOffer(after: delay)
    }

    /// Initiator: listens on `medium`, offers it, and waits for the peer's introduced channel. Every accepted
    /// channel's introduction is read at the same time as the others' (``UpgradeIntroductions``), so strangers on
    /// the listener cannot hold the peer's channel back.
    private func offerUpgrade(using medium: any Medium) async {
        let introductions = UpgradeIntroductions(
            endpointID: endpointID ?? "", timeout: timeouts.clientIntroduction, logger: logger)
        let listener: any UpgradeListener
        do {
            listener = try await medium.startUpgradeListener { introductions.accept($0) }
        } catch {
            introductions.finish()
            logger.notice("not offering a bandwidth upgrade now", metadata: ["to": "\(medium.kind)", "error": "\(error)"])
            upgrade.cannotOffer()
            scheduleUpgradeRetry()
            return
        }
        guard !ended, let offer = upgrade.offer(listener.pathInfo) else {
            introductions.finish()
            await listener.stop()
            return
        }
        upgradeListener = listener
        upgradeArrivals = introductions
        logger.info("offering a bandwidth upgrade", metadata: ["to": "\(medium.kind)"])
        await writer.enqueue(frameItem(offer))
        let wait = timeouts.upgradeChannel
        let timer = Task {
            try? await Task.sleep(for: wait)
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
            await stopUpgradeListener()
            guard !ended else {
                await candidate.close()
                return
            }
            await performUpgrade(upgrade.newChannelReady(), newChannel: candidate)
            return
        }
        await stopUpgradeListener()
        await performUpgrade(upgrade.newChannelFailed(NearbyError(
            .timeout, "the peer did not open the upgraded channel within \(wait)")))
        scheduleUpgradeRetry()
    }

    /// Responder: connects to the offered path, introduces us, and waits for the ack.
    private func connectForUpgrade(to path: UpgradePathInfo) async {
        guard let kind = MediumKind(upgradePath: path.medium),
            let medium = upgradeMediums.first(where: { $0.kind == kind })
        else {
            await performUpgrade(upgrade.newChannelFailed(NearbyError(.mediumUnavailable, "no medium for the upgrade path")))
            return
        }
        logger.info("taking a bandwidth upgrade", metadata: ["to": "\(kind)"])
        let channel: any EndpointChannel
        do {
            channel = try await medium.connectForUpgrade(to: path)
        } catch {
            await performUpgrade(upgrade.newChannelFailed(Self.nearbyError(error, "connecting for the upgrade failed")))
            return
        }
        do {
            let introduction = OfflineFrames.clientIntroduction(endpointID: localEndpointID, lastEndpointID: localEndpointID)
            try await channel.writeFrame(OfflineFrames.serialize(introduction))
            if path.supportsClientIntroductionAck {
                let body = try await Self.readFirstFrame(on: channel, within: timeouts.clientIntroduction)
                guard case .bandwidthUpgradeNegotiation(let ack) = try OfflineFrameParser.parse(body),
                    ack.eventType == .clientIntroductionAck
                else {
                    throw NearbyError(.invalidFrame, "expected CLIENT_INTRODUCTION_ACK on the upgraded channel")
                }
            }
        } catch {
            await channel.close()
            await performUpgrade(upgrade.newChannelFailed(Self.nearbyError(error, "introducing the upgraded channel failed")))
            return
        }
        guard !ended else {
            await channel.close()
            return
        }
        await performUpgrade(upgrade.newChannelReady(), newChannel: channel)
    }

    // MARK: - Actions

    /// Performs the upgrade machine's actions. `newChannel` is the introduced channel when the actions come from
    /// ``BandwidthUpgradeMachine/newChannelReady()``; it is closed when the machine did not take it.
    func performUpgrade(_ actions: [BandwidthUpgradeMachine.Action], newChannel: (any EndpointChannel)? = nil) async {
        var taken = false
        for action in actions where !ended {
            switch action {
            case .connect(let path):
                Task { await self.connectForUpgrade(to: path) }
            case .send(let frame):
                await writer.enqueue(frameItem(frame))
            case .holdWritesAfter(let lastWrite):
                taken = true
                pendingChannel = newChannel
                sendGateClosed = true
                upgradeDrainDeadline = .now + timeouts.upgradeDrain
                logger.debug("upgraded channel ready; draining the prior channel")
                await enqueueUpgradeWrite(.holdAfter(lastWrite))
            case .sendOnPriorChannel(let safeToClose):
                await enqueueUpgradeWrite(.priority(safeToClose))
            case .switchChannels:
                await switchChannels()
            case .abandon(let error):
                logger.notice("bandwidth upgrade abandoned; staying on \(readChannel.medium)", metadata: ["error": "\(error)"])
                upgradeArrivals?.finish()
            case .fail(let error):
                await end(error)
            }
        }
        if !taken, let newChannel { await newChannel.close() }
    }

    /// Queues an upgrade frame for the writer behind the previous one, so the writer sees LAST_WRITE,
    /// SAFE_TO_CLOSE and the switch in the order the machine decided them.
    private func enqueueUpgradeWrite(_ item: OutboundFrameWriter.Item) async {
        let previous = upgradeWriteTail
        let writer = self.writer
        let task = Task {
            await previous?.value
            await writer.enqueue(item)
        }
        upgradeWriteTail = task
        await task.value
    }

    /// The peer's SAFE_TO_CLOSE arrived: read and write on the new channel, say goodbye on the old one.
    private func switchChannels() async {
        guard let next = pendingChannel else {
            await end(NearbyError(.invalidFrame, "SAFE_TO_CLOSE_PRIOR_CHANNEL without an upgraded channel"))
            return
        }
        let prior = readChannel
        pendingChannel = nil
        upgradeDrainDeadline = nil
        readChannel = next
        chunkSize.withLock { $0 = next.medium.maxTransmitPacketSize }
        await enqueueUpgradeWrite(.switchChannel(next))
        openSendGate()
        info?.medium = next.medium
        logger[metadataKey: "medium"] = "\(next.medium)"
        logger[metadataKey: "peer"] = "\(next.peerDescription)"
        logger.info("bandwidth upgrade done", metadata: ["from": "\(prior.medium)"])
        onEvent(.mediumChanged(endpointID: endpointID ?? "", medium: next.medium))
        let goodbyeWait = timeouts.priorChannelGoodbye
        Task {
            // Plaintext, so the D2D sequence numbers do not move; then one read so the peer has time to read our
            // SAFE_TO_CLOSE before the channel goes.
            try? await prior.writeFrame(OfflineFrames.serialize(OfflineFrames.disconnection()))
            _ = try? await Self.readFirstFrame(on: prior, within: goodbyeWait)
            await prior.close()
        }
    }

    // MARK: - Gate and clean-up

    /// Payload senders wait here while a bandwidth upgrade holds writes.
    func waitForSendGate() async {
        while sendGateClosed && !ended {
            await withCheckedContinuation { sendGateWaiters.append($0) }
        }
    }

    func openSendGate() {
        sendGateClosed = false
        let waiters = sendGateWaiters
        sendGateWaiters = []
        for waiter in waiters { waiter.resume() }
    }

    private func stopUpgradeListener() async {
        let listener = upgradeListener
        upgradeListener = nil
        upgradeArrivals = nil
        await listener?.stop()
    }

    /// Takes every upgrade resource off the session (the session is ending); returns what closes them.
    func abandonUpgradeResources() -> @Sendable () async -> Void {
        upgradeOfferTask?.cancel()
        upgradeOfferTask = nil
        upgradeArrivals?.finish()
        upgradeArrivals = nil
        let listener = upgradeListener
        upgradeListener = nil
        let pending = pendingChannel
        pendingChannel = nil
        return {
            await listener?.stop()
            await pending?.close()
        }
    }

    // MARK: - New-channel I/O

    /// Reads one frame, closing the channel when none arrives within `timeout` (which ends the read).
    static func readFirstFrame(on channel: any EndpointChannel, within timeout: Duration) async throws -> [UInt8] {
        let timer = Task {
            try await Task.sleep(for: timeout)
            await channel.close()
        }
        defer { timer.cancel() }
        guard let body = try await channel.readFrame() else {
            throw NearbyError(.timeout, "no frame within \(timeout) on \(channel.peerDescription)")
        }
        return body
    }
}
