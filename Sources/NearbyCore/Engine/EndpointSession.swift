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
    /// Where the offering side's listener hands over accepted channels to have their introduction read.
    var upgradeArrivals: UpgradeIntroductions?
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
    private var tracker: IncomingPayloadTracker
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
    /// When the connection must be accepted or rejected by both sides (set once the handshake is done).
    private var decisionDeadline: ContinuousClock.Instant?
    /// Set while the read loop waits for the app to take a chunk of a stream payload (back-pressure); the
    /// keep-alive timeout does not count meanwhile.
    private var deliveringStreamChunk = false
    /// The limits this session enforces.
    let limits: ResourceLimits
    /// Set once both sides accepted, readable without hopping onto the actor (the engine counts pending
    /// endpoints with it).
    nonisolated let reachedConnected = LockedValue(false)
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
    ///   - channel: The channel the connection starts on.
    ///   - machine: The connection state machine, in its initial state for this side.
    ///   - keepAlive: The keep-alive interval and timeout asked of the peer.
    ///   - receiveDirectory: Where received files are written.
    ///   - timeouts: The request, handshake, drain and upgrade deadlines.
    ///   - logger: The logger.
    ///   - admission: Decides whether an incoming request may proceed (strategy, duplicates, tie-break); `nil`
    ///     admits every request.
    ///   - upgradeMediums: Mediums the connection may move to in a bandwidth upgrade (those whose
    ///     ``Medium/supportsUpgradeListening`` is true). Empty: offers are refused.
    ///   - autoUpgrade: Whether an incoming (advertiser-side) session offers an upgrade once connected.
    ///   - localEndpointID: Our endpoint ID, sent in the CLIENT_INTRODUCTION of an upgrade.
    ///   - limits: The write deadline, the decision deadline and the range peer-chosen keep-alive timeouts are
    ///     clamped into.
    ///   - onEvent: Receives every event of the connection, in order.
    ///   - onEnd: Called once when the session has ended.
    public init(
        channel: any EndpointChannel, machine: ConnectionStateMachine, keepAlive: KeepAliveSettings,
        receiveDirectory: URL, timeouts: Timeouts = .init(), limits: ResourceLimits = .init(), logger: Logger,
        admission: Admission? = nil,
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
        files = ReceivedFileStore(directory: receiveDirectory, minimumFreeSpace: limits.minimumFreeDiskSpace)
        tracker = IncomingPayloadTracker(limits: limits)
        self.timeouts = timeouts
        self.limits = limits
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
        await perform(machine.decide(accept: accept), fromApp: true)
    }

    /// Says goodbye and closes the connection; returns once the channel is closed, and always within
    /// ``disconnectReturnBound``: a peer that stopped reading cannot hold it (the goodbye is queued without
    /// waiting, and the channel is closed under a stuck write in the background).
    public func disconnect() async {
        if !ended {
            if machine.isConnected || machine.isAwaitingDecisions {
                writer.post(frameItem(OfflineFrames.disconnection()))
            }
            await end(nil, closeDelay: timeouts.disconnectDelay)
        }
        if let closeTask { await Self.wait(for: closeTask, atMost: Self.disconnectReturnBound) }
    }

    /// The longest ``disconnect()`` waits for the channel to close.
    public static let disconnectReturnBound: Duration = .seconds(3)

    /// Waits for `task`, or for `bound` when it takes longer (the task goes on).
    private static func wait(for task: Task<Void, Never>, atMost bound: Duration) async {
        let race = AsyncStream<Void>.makeStream()
        let watcher = Task {
            await task.value
            race.continuation.yield()
        }
        let timer = Task {
            try? await Task.sleep(for: bound)
            race.continuation.yield()
        }
        var iterator = race.stream.makeAsyncIterator()
        _ = await iterator.next()
        race.continuation.finish()
        watcher.cancel()
        timer.cancel()
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

    /// When encryption went on here (the start of the plaintext keep-alive tolerance).
    private var encryptionEnabledAt: ContinuousClock.Instant?
    /// Whether a frame from the peer decrypted: the peer has switched, so it sends nothing in plaintext any more.
    private var peerSentEncrypted = false

    private func handle(_ body: [UInt8]) async {
        lastRead = .now
        var plaintext = body
        if secure.isEnabled {
            do {
                plaintext = try secure.context.withLock { context throws(NearbyError) -> [UInt8] in
                    try context!.decode(body)
                }
                peerSentEncrypted = true
            } catch {
                // Peers may send a keep-alive in plaintext around the switch to encryption (§3.6): before their
                // first encrypted frame, and not long after ours.
                guard let frame = try? OfflineFrameParser.parse(body), case .keepAlive = frame else {
                    await end(error)
                    return
                }
                let window = timeouts.plaintextKeepAliveWindow
                guard !peerSentEncrypted, let since = encryptionEnabledAt, ContinuousClock.now - since < window else {
                    await end(NearbyError(
                        .invalidFrame,
                        "plaintext KEEP_ALIVE after the switch to encryption (tolerated only before the peer's first encrypted frame and within \(window))"))
                    return
                }
            }
        }
        await perform(machine.receive(plaintext))
    }

    /// Performs the state machine's actions. Frames go to the writer without waiting; those the peer provoked
    /// (`fromApp` false) wait once the writer's backlog is full, so a flooding peer that never reads is held back
    /// instead of growing the queue, while the app's decisions never wait.
    private func perform(_ actions: [ConnectionStateMachine.Action], fromApp: Bool = false) async {
        // A rejection is the outcome even if the channel ends while the response is still being written (the
        // peer may read it and hang up before this loop gets to `.rejected`).
        for case .rejected(let byPeer) in actions { pendingRejection = byPeer }
        for action in actions where !ended {
            switch action {
            case .sendRaw(let bytes):
                if fromApp { writer.post(.plain(bytes)) } else { await writer.postBounded(.plain(bytes)) }
            case .sendFrame(let frame):
                if fromApp {
                    writer.post(frameItem(frame))
                } else if frame.v1.type == .keepAlive, frame.v1.keepAlive.ack, !writer.isIdle {
                    // A KEEP_ALIVE ack is skipped while other frames are on their way: they prove we are alive
                    // just as well, and a peer that floods KEEP_ALIVE and never reads cannot make acks pile up or
                    // hold our read loop.
                    continue
                } else {
                    await writer.postBounded(frameItem(frame))
                }
            case .requestReceived(let id, let nonce, let settings):
                setPeerEndpointID(id)
                keepAlive = settings.clamped(timeoutTo: limits.peerKeepAliveTimeoutRange)
                if keepAlive != settings {
                    logger.notice("clamped the peer's keep-alive timeout", metadata: [
                        "asked": "\(settings.timeout)", "used": "\(keepAlive.timeout)"])
                }
                phaseDeadline = .now + timeouts.handshake
                if let admission, await !admission(self, id, nonce) {
                    await end(NearbyError(.connectionRejected, "incoming request from \(id) refused"))
                }
            case .initiated(var connectionInfo):
                phaseDeadline = nil
                if let id = endpointIDValue { connectionInfo.endpointID = id }
                info = connectionInfo
                decisionDeadline = .now + limits.pendingDecisionTimeout
                logger.info("connection initiated", metadata: ["digits": "\(connectionInfo.verificationDigits)"])
                onEvent(.initiated(connectionInfo))
            case .enableEncryption(let context, let replay):
                secure.context.withLock { $0 = context }
                encryptionEnabledAt = .now
                for body in replay {
                    await handle(body)
                }
            case .connected:
                wasConnected = true
                decisionDeadline = nil
                reachedConnected.withLock { $0 = true }
                logger.info("connected")
                if let info { onEvent(.connected(info)) }
                startUpgradeIfWanted()
            case .rejected(let byPeer):
                decisionDeadline = nil
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
        // A file that failed here (its folder or a write) already reported `failure`: the rest of this batch
        // (its chunk, its progress, its end) must not follow with more updates.
        var failedHere: Set<PayloadID> = []
        for action in actions where !ended {
            switch action {
            case .bytesReceived(let id, let bytes):
                onEvent(.bytesReceived(endpointID: endpoint, payloadID: id, bytes: bytes))
            case .fileStarted(let id, let fileName, let parentFolder, let total):
                do {
                    try files.begin(id, fileName: fileName, parentFolder: parentFolder, totalSize: total)
                    let name = ReceivedFileNames.displayName(fileName: fileName, parentFolder: parentFolder)
                    onEvent(.fileStarted(endpointID: endpoint, payloadID: id, name: name, totalBytes: total))
                } catch {
                    logger.error("cannot receive file", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                    failedHere.insert(id)
                    await performPayloadActions(tracker.failLocally(id))
                }
            case .fileChunk(let id, let data):
                guard !failedHere.contains(id) else { continue }
                do {
                    try files.write(id, data)
                } catch {
                    logger.error("writing a received file failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                    failedHere.insert(id)
                    await performPayloadActions(tracker.failLocally(id))
                }
            case .fileFinished(let id, let total):
                guard !failedHere.contains(id) else { continue }
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
                // No buffer between the read loop and the app: each chunk is handed over when the app asks for
                // it, so an app that does not read holds the read loop, the socket fills and the sender waits.
                let stream = AsyncThrowingChannel<[UInt8], any Error>()
                streams[id] = stream
                onEvent(.streamReceived(endpointID: endpoint, payloadID: id, stream: IncomingByteStream(channel: stream)))
            case .streamChunk(let id, let data):
                guard let stream = streams[id] else { break }
                deliveringStreamChunk = true
                await stream.send(Array(data))
                deliveringStreamChunk = false
                // The keep-alive timeout counts from when the read loop resumed.
                lastRead = .now
            case .streamFinished(let id):
                streams.removeValue(forKey: id)?.finish()
            case .update(let update):
                guard !failedHere.contains(update.payloadID) else { continue }
                onEvent(.transferUpdate(endpointID: endpoint, update: update, isOutgoing: false))
            case .discard(let id, let kind):
                if kind == .file { files.discard(id) }
                streams.removeValue(forKey: id)?.fail(NearbyError(.endpointIoError, "stream payload \(id) did not complete"))
            case .sendControl(let frame):
                await writer.postBounded(frameItem(frame))
            case .outgoingControl(let id, let event):
                outgoing[id]?.peerEvent = event
            case .violation(let error):
                await end(error)
            case .limitExceeded(let id, let error):
                logger.warning("incoming payload failed at a limit", metadata: ["payload_id": "\(id)", "error": "\(error)"])
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
            let writeDeadline = limits.writeTimeout ?? keepAlive.timeout
            if let started = writer.writeInProgressSince, now - started > writeDeadline {
                await end(NearbyError(
                    .timeout, "a write to the peer did not finish within \(writeDeadline): the peer stopped reading"),
                    closeAtOnce: true)
                return
            }
            // A failed write drops every later frame: the session is over even if the read loop does not notice
            // (it may be waiting for the app to take a stream chunk).
            if let failure = writer.failure {
                await end(failure)
                return
            }
            if let deadline = decisionDeadline, now > deadline {
                await decisionExpired()
                if ended { return }
            }
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
            if !deliveringStreamChunk, now - lastRead > keepAlive.timeout {
                await end(NearbyError(.timeout, "nothing heard from the peer for \(keepAlive.timeout)"))
                return
            }
            // A busy writer is proof of life already; an idle one gets a keep-alive (never waited for).
            if now - writer.lastWriteInstant > keepAlive.interval, !upgrade.isDraining, writer.isIdle {
                let sequence = keepAliveSequence
                keepAliveSequence &+= 1
                writer.post(frameItem(OfflineFrames.keepAlive(ack: false, sequenceNumber: sequence)))
            }
        }
    }

    /// Nobody decided within ``ResourceLimits/pendingDecisionTimeout``: we reject (the peer gets our rejection);
    /// if our app had accepted and the peer never answered, the connection fails with a timeout.
    private func decisionExpired() async {
        decisionDeadline = nil
        let timeout = limits.pendingDecisionTimeout
        let actions = machine.decide(accept: false)
        if !actions.isEmpty {
            logger.notice("no decision within \(timeout); rejecting")
            await perform(actions, fromApp: true)
            guard !ended else { return }
            // The peer has not decided either: our rejection is on its way; end as rejected by us.
            pendingRejection = false
            await end(nil, closeDelay: timeouts.rejectedCloseDelay)
        } else if machine.isAwaitingDecisions {
            writer.post(frameItem(OfflineFrames.disconnection()))
            await end(NearbyError(.timeout, "the peer did not accept or reject within \(timeout)"),
                      closeDelay: timeouts.disconnectDelay)
        }
    }

    // MARK: - Ending

    /// Ends the session. With `closeAtOnce` (a write is stuck) the channel is closed before anything else, which
    /// fails the stuck write; otherwise queued frames get ``Timeouts/drainBeforeClose`` to go out.
    func end(_ error: NearbyError?, closeDelay: Duration = .zero, report: Bool = true, closeAtOnce: Bool = false) async {
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
            var drained = !closeAtOnce
            if closeAtOnce { await writer.channel.close() }
            if let writerTask {
                // A peer that stopped reading must not keep the socket open forever: after the bound, closing the
                // channel fails the write that is stuck, and the writer then reaches its end marker.
                let cutoff = Task { () -> Bool in
                    try? await Task.sleep(for: drainTimeout)
                    if Task.isCancelled { return false }
                    await writer.channel.close()
                    return true
                }
                writer.finishAfterQueued()
                _ = await writerTask.value
                cutoff.cancel()
                if await cutoff.value { drained = false }
            }
            // Lingering for the peer to read our last frames is pointless when it stopped reading.
            if closeDelay > .zero, drained { try? await Task.sleep(for: closeDelay) }
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
