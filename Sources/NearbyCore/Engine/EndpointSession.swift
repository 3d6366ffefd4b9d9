import AsyncAlgorithms
import Foundation
import Logging
import NearbySecurity
import NearbyWire

/// Holds an endpoint's D2D context where both the reader and the writer can reach it.
final class SecureContextBox: Sendable {
    let context = LockedValue<D2DSecureChannel?>(nil)
    var isEnabled: Bool { context.withLock { $0 != nil } }
}

/// Drives one connection over one channel: performs the actions of its ``ConnectionStateMachine`` and
/// ``IncomingPayloadTracker``, sends payloads, keeps the connection alive, and reports ``EndpointEvent``s.
public actor EndpointSession {
    /// How the session decides whether an incoming request may proceed (strategy, duplicates, tie-break).
    public typealias Admission = @Sendable (_ session: EndpointSession, _ endpointID: String, _ nonce: Int32) async -> Bool

    /// Timeouts of the connection phases.
    public struct Timeouts: Sendable, Hashable {
        /// How long an incoming socket may take to send its connection request.
        public var connectionRequest: Duration = .seconds(2)
        /// How long the UKEY2 handshake may take.
        public var handshake: Duration = .seconds(15)
        /// How long the channel stays open after we rejected, so the peer reads our response.
        public var rejectedCloseDelay: Duration = .seconds(2)
        /// How long we wait after saying goodbye before closing.
        public var disconnectDelay: Duration = .milliseconds(500)
        /// How long frames already queued may take to reach the socket when the connection ends, before the
        /// channel is closed under them.
        public var drainBeforeClose: Duration = .seconds(5)
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

    /// Whether we opened the channel.
    public nonisolated let isOutgoing: Bool

    /// The channel frames are read from; a bandwidth upgrade replaces it.
    var readChannel: any EndpointChannel
    var machine: ConnectionStateMachine
    let secure = SecureContextBox()
    let writer: OutboundFrameWriter
    /// The bandwidth upgrade of this connection.
    var upgrade: BandwidthUpgradeMachine
    /// Mediums this session may upgrade to (they support upgrade listening).
    let upgradeMediums: [any Medium]
    /// Whether this side (as the advertiser) starts an upgrade once connected.
    let autoUpgrade: Bool
    /// Our endpoint ID, for the CLIENT_INTRODUCTION of an upgrade.
    let localEndpointID: String
    /// The offering side's listener while it waits for the new channel.
    var upgradeListener: (any UpgradeListener)?
    /// Where the offering side's listener hands over accepted channels.
    var upgradeArrivals: AsyncStream<any EndpointChannel>.Continuation?
    /// The new channel while the old one drains.
    var pendingChannel: (any EndpointChannel)?
    /// Upgrade frames for the writer, in the order the upgrade machine asked for them.
    var upgradeWriteTail: Task<Void, Never>?
    /// The offering side's next offer, waiting for its delay.
    var upgradeOfferTask: Task<Void, Never>?
    /// The wait before the last retried offer, doubled for the next.
    var upgradeRetryDelay: Duration?
    /// When the old channel must have drained, while it drains.
    var upgradeDrainDeadline: ContinuousClock.Instant?
    /// While closed, payload senders wait before queueing frames (a bandwidth upgrade holds writes).
    var sendGateClosed = false
    var sendGateWaiters: [CheckedContinuation<Void, Never>] = []
    /// The chunk size of the current medium, read by payload senders.
    nonisolated let chunkSize: LockedValue<Int>
    private var tracker = IncomingPayloadTracker()
    private let files: ReceivedFileStore
    private var streams: [PayloadID: AsyncThrowingChannel<[UInt8], any Error>] = [:]
    private var outgoing: [PayloadID: OutgoingPayloadState] = [:]
    private var laneTails: [PayloadKind: Task<Void, Never>] = [:]
    private var endpointIDValue: String?
    var info: ConnectionInfo?
    private var wasConnected = false
    /// Set once the state machine decided the connection is rejected (by the peer when `true`).
    private var pendingRejection: Bool?
    private var keepAlive: KeepAliveSettings
    private var keepAliveSequence: UInt32 = 0
    private var lastRead = ContinuousClock.now
    private var phaseDeadline: ContinuousClock.Instant?
    var ended = false
    private var writerTask: Task<(any Error)?, Never>?
    private var closeTask: Task<Void, Never>?
    let timeouts: Timeouts
    private let admission: Admission?
    let onEvent: @Sendable (EndpointEvent) -> Void
    private let onEnd: @Sendable (EndpointSession) -> Void
    var logger: Logger

    /// Creates a session. Call ``run()`` to start it.
    ///
    /// - Parameters:
    ///   - upgradeMediums: Mediums the connection may move to in a bandwidth upgrade (those whose
    ///     ``Medium/supportsUpgradeListening`` is true). Empty: offers are refused.
    ///   - autoUpgrade: Whether an incoming (advertiser-side) session offers an upgrade once connected.
    ///   - localEndpointID: Our endpoint ID, sent in the CLIENT_INTRODUCTION of an upgrade.
    public init(
        channel: any EndpointChannel, machine: ConnectionStateMachine, keepAlive: KeepAliveSettings,
        receiveDirectory: URL, timeouts: Timeouts = .init(), logger: Logger, admission: Admission? = nil,
        upgradeMediums: [any Medium] = [], autoUpgrade: Bool = true, localEndpointID: String = "",
        onEvent: @escaping @Sendable (EndpointEvent) -> Void,
        onEnd: @escaping @Sendable (EndpointSession) -> Void = { _ in }
    ) {
        readChannel = channel
        self.machine = machine
        isOutgoing = machine.role == .outgoing
        upgrade = BandwidthUpgradeMachine(role: machine.role == .incoming ? .initiator : .responder)
        self.upgradeMediums = upgradeMediums
        self.autoUpgrade = autoUpgrade
        self.localEndpointID = localEndpointID
        chunkSize = LockedValue(channel.medium.maxTransmitPacketSize)
        self.keepAlive = keepAlive
        files = ReceivedFileStore(directory: receiveDirectory)
        self.timeouts = timeouts
        self.admission = admission
        self.onEvent = onEvent
        self.onEnd = onEnd
        var logger = logger
        logger[metadataKey: "medium"] = "\(channel.medium)"
        logger[metadataKey: "peer"] = "\(channel.peerDescription)"
        self.logger = logger
        writer = OutboundFrameWriter(channel: channel, secure: secure)
    }

    /// The peer's endpoint ID, once known.
    public var endpointID: String? { endpointIDValue }
    /// The connection info, once the handshake is done.
    public var connectionInfo: ConnectionInfo? { info }
    /// Whether both sides accepted and the connection is up.
    public var isConnected: Bool { machine.isConnected && !ended }
    /// Whether the session is over.
    public var isEnded: Bool { ended }
    /// The nonce of our request (outgoing sessions).
    public var requestNonce: Int32 { machine.requestNonce }
    /// The medium the connection runs over now (it changes after a bandwidth upgrade).
    public var medium: MediumKind { readChannel.medium }

    /// Sets the endpoint ID an outgoing session reports for its peer.
    public func setPeerEndpointID(_ id: String) {
        endpointIDValue = id
        logger[metadataKey: "endpoint_id"] = "\(id)"
    }

    /// Runs the session until the connection ends.
    public func run() async {
        let writer = self.writer
        writerTask = Task { await writer.run() }
        let watchdog = Task { await self.watch() }
        if isOutgoing {
            phaseDeadline = .now + timeouts.handshake
            await perform(machine.start())
        } else {
            phaseDeadline = .now + timeouts.connectionRequest
        }
        while !ended {
            do {
                guard let body = try await readChannel.readFrame() else {
                    if machine.isAwaitingDecisions {
                        let actions = machine.peerGone()
                        if case .rejected = actions.first { await perform(actions) }
                    }
                    await end(NearbyError(.endpointIoError, "the peer closed the connection"))
                    break
                }
                await handle(body)
            } catch {
                await end(Self.nearbyError(error, "reading from the peer failed"))
            }
        }
        watchdog.cancel()
    }

    /// Our app's decision on the pending connection.
    public func decide(accept: Bool) async {
        await perform(machine.decide(accept: accept))
    }

    /// Says goodbye and closes the connection; returns once the channel is closed.
    public func disconnect() async {
        if !ended {
            if machine.isConnected || machine.isAwaitingDecisions {
                await writer.enqueue(frameItem(OfflineFrames.disconnection()))
            }
            await end(nil, closeDelay: timeouts.disconnectDelay)
        }
        await closeTask?.value
    }

    /// Starts sending a payload; progress and the outcome arrive as ``EndpointEvent/transferUpdate(endpointID:update:isOutgoing:)``.
    /// Payloads of the same kind go out one after another; different kinds interleave.
    public func send(_ source: OutgoingPayloadSource, id: PayloadID) throws(NearbyError) {
        guard machine.isConnected, !ended else {
            throw NearbyError(.endpointUnknown, "not connected to \(endpointIDValue ?? "the endpoint")")
        }
        guard id != 0 else { throw NearbyError(.invalidArgument, "payload ID 0 is not allowed") }
        guard outgoing[id] == nil else { throw NearbyError(.invalidArgument, "payload \(id) is already being sent") }
        if case .bytes(let bytes) = source, bytes.count > PayloadLimits.maxBytesPayloadSize {
            throw NearbyError(
                .invalidArgument,
                "a bytes payload holds at most \(PayloadLimits.maxBytesPayloadSize) bytes, got \(bytes.count); send a file or stream")
        }
        var reader = try PayloadChunkReader(source: source, chunkSize: chunkSize.withLock { $0 })
        outgoing[id] = OutgoingPayloadState(kind: source.kind)
        let previous = laneTails[source.kind]
        laneTails[source.kind] = Task {
            await previous?.value
            await self.transmit(id: id, reader: &reader)
            reader.close()
        }
    }

    /// Cancels a payload in either direction; both sides see it as canceled.
    public func cancel(_ id: PayloadID) async -> Bool {
        if outgoing[id] != nil {
            outgoing[id]?.cancelRequested = true
            return true
        }
        if tracker.activePayloadIDs.contains(id) {
            await performPayloadActions(tracker.cancel(id))
            return true
        }
        return false
    }

    // MARK: - Receiving

    private func handle(_ body: [UInt8]) async {
        lastRead = .now
        var plaintext = body
        if secure.isEnabled {
            do {
                plaintext = try secure.context.withLock { context throws(NearbyError) -> [UInt8] in
                    try context!.decode(body)
                }
            } catch {
                // Peers may send a keep-alive in plaintext around the switch to encryption.
                guard let frame = try? OfflineFrameParser.parse(body), case .keepAlive = frame else {
                    await end(error)
                    return
                }
            }
        }
        await perform(machine.receive(plaintext))
    }

    private func perform(_ actions: [ConnectionStateMachine.Action]) async {
        // A rejection is the outcome even if the channel ends while the response is still being written (the
        // peer may read it and hang up before this loop gets to `.rejected`).
        for case .rejected(let byPeer) in actions { pendingRejection = byPeer }
        for action in actions where !ended {
            switch action {
            case .sendRaw(let bytes):
                await writer.enqueue(.plain(bytes))
            case .sendFrame(let frame):
                await writer.enqueue(frameItem(frame))
            case .requestReceived(let id, let nonce, let settings):
                setPeerEndpointID(id)
                keepAlive = settings
                phaseDeadline = .now + timeouts.handshake
                if let admission, await !admission(self, id, nonce) {
                    await end(NearbyError(.connectionRejected, "incoming request from \(id) refused"))
                }
            case .initiated(var connectionInfo):
                phaseDeadline = nil
                if let id = endpointIDValue { connectionInfo.endpointID = id }
                info = connectionInfo
                logger.info("connection initiated", metadata: ["digits": "\(connectionInfo.verificationDigits)"])
                onEvent(.initiated(connectionInfo))
            case .enableEncryption(let context, let replay):
                secure.context.withLock { $0 = context }
                for body in replay {
                    await handle(body)
                }
            case .connected:
                wasConnected = true
                logger.info("connected")
                if let info { onEvent(.connected(info)) }
                startUpgradeIfWanted()
            case .rejected(let byPeer):
                logger.info("connection rejected", metadata: ["by_peer": "\(byPeer)"])
                onEvent(.rejected(endpointID: endpointIDValue ?? "", byPeer: byPeer))
                await end(nil, closeDelay: byPeer ? .zero : timeouts.rejectedCloseDelay, report: false)
            case .deliver(let transfer):
                await performPayloadActions(tracker.receive(transfer))
            case .upgrade(let negotiation):
                let mediums = upgradeMediums
                let current = readChannel.medium
                await performUpgrade(upgrade.receive(negotiation) { path in
                    guard let kind = MediumKind(upgradePath: path.medium), kind != current else { return false }
                    return mediums.contains { $0.kind == kind }
                })
            case .peerDisconnected:
                await end(nil)
            case .fail(let error):
                await end(error)
            }
        }
    }

    private func performPayloadActions(_ actions: [IncomingPayloadTracker.Action]) async {
        let endpoint = endpointIDValue ?? ""
        for action in actions where !ended {
            switch action {
            case .bytesReceived(let id, let bytes):
                onEvent(.bytesReceived(endpointID: endpoint, payloadID: id, bytes: bytes))
            case .fileStarted(let id, let fileName, let parentFolder, let total):
                do {
                    try files.begin(id, fileName: fileName, parentFolder: parentFolder)
                    let name = ReceivedFileNames.displayName(fileName: fileName, parentFolder: parentFolder)
                    onEvent(.fileStarted(endpointID: endpoint, payloadID: id, name: name, totalBytes: total))
                } catch {
                    logger.error("cannot receive file", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                    await performPayloadActions(tracker.failLocally(id))
                }
            case .fileChunk(let id, let data):
                do {
                    try files.write(id, data)
                } catch {
                    logger.error("writing a received file failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                    await performPayloadActions(tracker.failLocally(id))
                }
            case .fileFinished(let id, let total):
                do {
                    let url = try files.finish(id, expectedSize: total)
                    let name = url.lastPathComponent
                    onEvent(.fileReceived(endpointID: endpoint, payloadID: id, url: url, name: name))
                    onEvent(.transferUpdate(
                        endpointID: endpoint,
                        update: PayloadTransferUpdate(payloadID: id, kind: .file, status: .success, bytesTransferred: total, totalBytes: total),
                        isOutgoing: false))
                } catch {
                    logger.error("finishing a received file failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                    onEvent(.transferUpdate(
                        endpointID: endpoint,
                        update: PayloadTransferUpdate(payloadID: id, kind: .file, status: .failure, bytesTransferred: total, totalBytes: total),
                        isOutgoing: false))
                }
            case .streamStarted(let id):
                let stream = AsyncThrowingChannel<[UInt8], any Error>()
                streams[id] = stream
                let (chunks, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
                Task {
                    do {
                        for try await chunk in stream { continuation.yield(chunk) }
                        continuation.finish()
                    } catch {
                        continuation.finish(throwing: error)
                    }
                }
                onEvent(.streamReceived(endpointID: endpoint, payloadID: id, stream: IncomingByteStream(chunks: chunks)))
            case .streamChunk(let id, let data):
                await streams[id]?.send(Array(data))
            case .streamFinished(let id):
                streams.removeValue(forKey: id)?.finish()
            case .update(let update):
                onEvent(.transferUpdate(endpointID: endpoint, update: update, isOutgoing: false))
            case .discard(let id, let kind):
                if kind == .file { files.discard(id) }
                streams.removeValue(forKey: id)?.fail(NearbyError(.endpointIoError, "stream payload \(id) did not complete"))
            case .sendControl(let frame):
                await writer.enqueue(frameItem(frame))
            case .outgoingControl(let id, let event):
                outgoing[id]?.peerEvent = event
            case .violation(let error):
                await end(error)
            }
        }
    }

    // MARK: - Sending

    private nonisolated func transmit(id: PayloadID, reader: inout PayloadChunkReader) async {
        let kind = reader.source.kind
        var totalSize: Int64 = -1
        var fileName: String?
        var parentFolder: String?
        switch reader.source {
        case .bytes(let bytes):
            totalSize = Int64(bytes.count)
        case .file(let url, let name, let folder):
            totalSize = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int64) ?? -1
            fileName = name
            parentFolder = folder
        case .stream:
            break
        }
        let header = OfflineFrames.payloadHeader(
            id: id, type: kind.wireType, totalSize: totalSize, fileName: fileName, parentFolder: parentFolder,
            lastModifiedMillis: fileName != nil ? Int64(Date().timeIntervalSince1970 * 1000) : nil)
        var offset: Int64 = 0
        var index: Int32 = 0
        var check = await outgoingCheck(id)
        while true {
            switch check {
            case .proceed:
                break
            case .stop(let status, let notifyPeer):
                if let notifyPeer {
                    await enqueueFrame(OfflineFrames.payloadControl(header: header, event: notifyPeer, offset: offset))
                }
                await finishOutgoing(id, kind: kind, status: status, bytes: offset, total: totalSize)
                return
            }
            let chunk: Data?
            reader.chunkSize = chunkSize.withLock { $0 }
            do {
                chunk = try await reader.next()
            } catch {
                await logOutgoingFailure(id, error)
                await enqueueFrame(OfflineFrames.payloadControl(header: header, event: .payloadError, offset: offset))
                await finishOutgoing(id, kind: kind, status: .failure, bytes: offset, total: totalSize)
                return
            }
            guard let chunk else {
                if totalSize >= 0 && offset != totalSize {
                    await enqueueFrame(OfflineFrames.payloadControl(header: header, event: .payloadError, offset: offset))
                    await finishOutgoing(id, kind: kind, status: .failure, bytes: offset, total: totalSize)
                    return
                }
                await enqueueFrame(OfflineFrames.payloadData(header: header, offset: offset, body: nil, index: index, isLast: true))
                let delivered = await !isEndedNow()
                await finishOutgoing(id, kind: kind, status: delivered ? .success : .failure, bytes: offset, total: totalSize)
                return
            }
            let frame = OfflineFrames.payloadData(header: header, offset: offset, body: chunk, index: index, isLast: false)
            offset += Int64(chunk.count)
            index += 1
            check = await sendChunk(frame, id: id, kind: kind, bytes: offset, total: totalSize)
        }
    }

    /// Queues one data chunk, reports the progress and says whether to go on: one hop onto the actor per chunk.
    private func sendChunk(_ frame: ProtoOfflineFrame, id: PayloadID, kind: PayloadKind, bytes: Int64, total: Int64) async
        -> OutgoingCheck
    {
        await enqueueFrame(frame)
        reportOutgoing(id, kind: kind, bytes: bytes, total: total)
        return outgoingCheck(id)
    }

    private enum OutgoingCheck {
        case proceed
        case stop(TransferStatus, notifyPeer: ProtoPayloadTransferFrame.ControlMessage.EventType?)
    }

    private func outgoingCheck(_ id: PayloadID) -> OutgoingCheck {
        guard let state = outgoing[id] else { return .stop(.failure, notifyPeer: nil) }
        if ended { return .stop(.failure, notifyPeer: nil) }
        if state.cancelRequested { return .stop(.canceled, notifyPeer: .payloadCanceled) }
        if let event = state.peerEvent { return .stop(event == .payloadCanceled ? .canceled : .failure, notifyPeer: nil) }
        return .proceed
    }

    private func isEndedNow() -> Bool { ended }

    private func logOutgoingFailure(_ id: PayloadID, _ error: any Error) {
        logger.error("reading an outgoing payload failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
    }

    private func enqueueFrame(_ frame: ProtoOfflineFrame) async {
        await waitForSendGate()
        guard !ended else { return }
        await writer.enqueue(frameItem(frame))
    }

    private func reportOutgoing(_ id: PayloadID, kind: PayloadKind, bytes: Int64, total: Int64) {
        onEvent(.transferUpdate(
            endpointID: endpointIDValue ?? "",
            update: PayloadTransferUpdate(payloadID: id, kind: kind, status: .inProgress, bytesTransferred: bytes, totalBytes: total),
            isOutgoing: true))
    }

    private func finishOutgoing(_ id: PayloadID, kind: PayloadKind, status: TransferStatus, bytes: Int64, total: Int64) {
        outgoing[id] = nil
        onEvent(.transferUpdate(
            endpointID: endpointIDValue ?? "",
            update: PayloadTransferUpdate(payloadID: id, kind: kind, status: status, bytesTransferred: bytes, totalBytes: total),
            isOutgoing: true))
    }

    func frameItem(_ frame: ProtoOfflineFrame) -> OutboundFrameWriter.Item {
        secure.isEnabled ? .sealed(frame) : .plain(OfflineFrames.serialize(frame))
    }

    // MARK: - Time

    private func watch() async {
        while !ended {
            try? await Task.sleep(for: .milliseconds(100))
            if Task.isCancelled || ended { return }
            let now = ContinuousClock.now
            if let deadline = upgradeDrainDeadline, now > deadline {
                await end(NearbyError(
                    .timeout, "the peer did not finish the bandwidth upgrade within \(timeouts.upgradeDrain)"))
                return
            }
            if let deadline = phaseDeadline, now > deadline {
                await end(NearbyError(.timeout, info == nil && endpointIDValue == nil && !isOutgoing
                    ? "no connection request within \(timeouts.connectionRequest)"
                    : "the handshake did not finish within \(timeouts.handshake)"))
                return
            }
            guard info != nil else { continue }
            if now - lastRead > keepAlive.timeout {
                await end(NearbyError(.timeout, "nothing heard from the peer for \(keepAlive.timeout)"))
                return
            }
            if now - writer.lastWriteInstant > keepAlive.interval, !upgrade.isDraining {
                let sequence = keepAliveSequence
                keepAliveSequence &+= 1
                await writer.enqueue(frameItem(OfflineFrames.keepAlive(ack: false, sequenceNumber: sequence)))
            }
        }
    }

    // MARK: - Ending

    func end(_ error: NearbyError?, closeDelay: Duration = .zero, report: Bool = true) async {
        guard !ended else { return }
        ended = true
        machine.close()
        let abandoned = abandonUpgradeResources()
        openSendGate()
        let endpoint = endpointIDValue ?? ""
        if let error {
            logger.notice("connection ended", metadata: ["error": "\(error)"])
        }
        if report {
            if wasConnected {
                onEvent(.disconnected(endpointID: endpoint, error: error))
            } else if let byPeer = pendingRejection {
                logger.info("connection rejected", metadata: ["by_peer": "\(byPeer)"])
                onEvent(.rejected(endpointID: endpoint, byPeer: byPeer))
            } else {
                onEvent(.connectionFailed(
                    endpointID: endpointIDValue, error: error ?? NearbyError(.endpointIoError, "the connection closed")))
            }
        }
        // Partial files go first, so nobody sees a failure while its partial file still exists.
        files.discardAll()
        for action in tracker.failAll() {
            if case .update(let update) = action {
                onEvent(.transferUpdate(endpointID: endpoint, update: update, isOutgoing: false))
            }
        }
        for stream in streams.values {
            stream.fail(error ?? NearbyError(.endpointIoError, "the connection closed"))
        }
        streams.removeAll()
        let writer = self.writer
        let writerTask = self.writerTask
        let channel = self.readChannel
        let onEnd = self.onEnd
        let drainTimeout = timeouts.drainBeforeClose
        closeTask = Task {
            if let writerTask {
                // A peer that stopped reading must not keep the socket open forever: after the bound, closing the
                // channel fails the write that is stuck, and the writer then reaches its end marker.
                let cutoff = Task {
                    try? await Task.sleep(for: drainTimeout)
                    if !Task.isCancelled { await writer.channel.close() }
                }
                await writer.finishAfterQueued()
                _ = await writerTask.value
                cutoff.cancel()
            }
            if closeDelay > .zero { try? await Task.sleep(for: closeDelay) }
            await channel.close()
            await writer.channel.close()
            await abandoned()
            onEnd(self)
        }
    }

    static func nearbyError(_ error: any Error, _ message: String) -> NearbyError {
        (error as? NearbyError) ?? NearbyError(.endpointIoError, message, cause: error)
    }
}
