import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyWire

/// Runs the Quick Share sessions of one `ConnectionManager`: turns its events into inputs of one
/// ``QuickShareSessionMachine`` per peer and performs the machines' actions.
///
/// Every input is handled without suspending (an actor method that does not `await`): the machine decides, the
/// session's bookkeeping is updated, events are yielded, and I/O is queued on the ``QuickShareOutbox`` in the
/// decision's order. Deadlines sleep on the injected clock in tasks this actor owns (`timers`), cancelled when
/// replaced or cleared and cancelled and awaited by ``stop()``.
actor QuickShareSessionDriver {
    /// Which side this driver plays for every session.
    enum Role: Sendable {
        case receiver(QuickShareLimits)
        case sender
    }

    struct Session {
        var machine: QuickShareSessionMachine
        var peer: QuickShareDevice
        var pin: String?
        /// Sender: what to send.
        var plan: QuickShareOutgoingPlan?
        /// Receiver: the offer, once introduced.
        var offer: QuickShareOffer?
        /// Receiver: where each complete file went.
        var receivedURLs: [Int64: URL] = [:]
        /// Bytes moved per payload of the share, and the share's total.
        var progress: [Int64: Int64] = [:]
        var totalBytes: Int64 = 0
        /// Sender: the outgoing payload whose final status the engine has not reported yet.
        var outgoingInFlight: Int64?
        /// The connection ended while `outgoingInFlight` was unsettled: `disconnected()` waits for its status.
        var disconnectPending = false
        /// The engine's error when it ended the connection.
        var disconnectCause: NearbyError?
    }

    enum TimerKind: Hashable {
        case deadline
        case linger
        case disconnectWait
    }

    struct TimerKey: Hashable {
        var endpointID: String
        var kind: TimerKind
    }

    /// How long a disconnection waits for the final status of the payload being sent.
    static let disconnectWait: Duration = .seconds(2)

    let manager: ConnectionManager
    private let role: Role
    private let fanOut: QuickShareEventFanOut
    private let outbox = QuickShareOutbox()
    private let logger: Logger
    /// The injected clock; with the system's `ContinuousClock`, a cancelled deadline frees its timer at once
    /// (``NearbyClock``; a cancelled `Task.sleep` keeps its timer until the deadline on Linux).
    private let clock: NearbyClock
    /// Receiver: the names of the files each peer announced, by payload ID, for the engine's naming hook.
    let fileNames: LockedValue<[String: [Int64: (String, String)]]>
    private let freeSpace: @Sendable () -> Int64?
    private var sessions: [String: Session] = [:]
    private var discovered: [String: QuickShareDevice] = [:]
    private var timers: [TimerKey: (generation: Int, task: Task<Void, Never>)] = [:]
    private var timerGeneration = 0
    private var deadlines: [String: QuickShareSessionMachine.Deadline] = [:]
    private let offerHandler: (@Sendable (QuickShareIncomingShare) -> Void)?
    private var random = SystemRandomNumberGenerator()

    init(
        manager: ConnectionManager, role: Role, fanOut: QuickShareEventFanOut,
        fileNames: LockedValue<[String: [Int64: (String, String)]]>, freeSpace: @escaping @Sendable () -> Int64?,
        clock: any Clock<Duration>, logger: Logger, onOffer: (@Sendable (QuickShareIncomingShare) -> Void)? = nil
    ) {
        self.offerHandler = onOffer
        self.manager = manager
        self.role = role
        self.fanOut = fanOut
        self.fileNames = fileNames
        self.freeSpace = freeSpace
        self.clock = NearbyClock(any: clock)
        self.logger = logger
    }

    /// Handles `events` until the stream ends or the calling task is cancelled.
    func run(_ events: AsyncStream<ConnectionEvent>) async {
        for await event in events {
            handle(event)
        }
    }

    /// Cancels and awaits every timer, then lets queued I/O finish.
    func stop() async {
        let running = timers.values.map(\.task)
        timers.removeAll()
        for task in running { task.cancel() }
        for task in running { await task.value }
        await outbox.close()
    }

    /// The devices discovery has found and not lost.
    var devices: [QuickShareDevice] { Array(discovered.values) }

    // MARK: - Calls from the API

    /// Sender: starts sharing `plan` with the discovered receiver `endpointID`.
    /// - Throws: `.endpointUnknown` for a device not found, `.alreadyConnectedToEndpoint` during a share with it, or
    ///   why the connection could not be requested.
    func startShare(_ plan: QuickShareOutgoingPlan, to endpointID: String, ownInfo: [UInt8], discoverer: Discoverer) async throws {
        guard let device = discovered[endpointID] else {
            throw NearbyError(.endpointUnknown, "no Quick Share device \(endpointID) has been found")
        }
        guard sessions[endpointID] == nil else {
            throw NearbyError(.alreadyConnectedToEndpoint, "a share with \(endpointID) is under way")
        }
        let machine = QuickShareSessionMachine(
            role: .sender(introduction: plan.introduction, payloadOrder: plan.order),
            pairedKeyEncryption: .randomPairedKeyEncryption(using: &random))
        sessions[endpointID] = Session(machine: machine, peer: device, plan: plan, totalBytes: plan.totalBytes)
        do {
            try await discoverer.requestConnection(to: endpointID, using: Data(ownInfo))
        } catch {
            if let session = sessions[endpointID], !session.machine.isFinished {
                sessions[endpointID] = nil
                cancelTimers(of: endpointID)
                let failure = error as? NearbyError ?? NearbyError(.endpointIoError, "\(error)")
                fanOut.yield(.finished(endpointID: endpointID, .failed(failure)))
            }
            throw error
        }
    }

    /// Receiver: the user's decision on an offer.
    /// - Throws: `.outOfOrderApiCall` when no offer from `endpointID` awaits a decision.
    func decide(_ endpointID: String, accept: Bool) throws {
        guard var session = sessions[endpointID] else {
            throw NearbyError(.endpointUnknown, "no share with \(endpointID)")
        }
        let actions = session.machine.decide(accept: accept)
        guard !actions.isEmpty else {
            throw NearbyError(.outOfOrderApiCall, "the share with \(endpointID) is not waiting for a decision")
        }
        sessions[endpointID] = session
        perform(actions, endpointID)
    }

    /// Cancels the share with `endpointID` (a CANCEL frame, then the connection closes).
    func cancel(_ endpointID: String) {
        guard var session = sessions[endpointID] else { return }
        let actions = session.machine.cancel()
        sessions[endpointID] = session
        perform(actions, endpointID)
    }

    /// Cancels every share.
    func cancelAll() {
        for endpointID in sessions.keys.sorted() { cancel(endpointID) }
    }

    /// Whether any share is under way.
    var hasActiveShares: Bool { sessions.values.contains { !$0.machine.isFinished } }

    // MARK: - Engine events

    private func handle(_ event: ConnectionEvent) {
        switch event {
        case .endpointFound(let endpointID, let context, _):
            guard case .sender = role else { return }
            guard let device = QuickShareDevice(endpointID: endpointID, endpointInfo: Array(context)) else {
                logger.debug("skipping an endpoint whose info is not Quick Share's", metadata: ["endpoint_id": "\(endpointID)"])
                return
            }
            discovered[endpointID] = device
            fanOut.yield(.deviceFound(device))
        case .endpointLost(let endpointID):
            guard discovered.removeValue(forKey: endpointID) != nil else { return }
            fanOut.yield(.deviceLost(endpointID: endpointID))
        case .discoveryFailed(let medium, let error):
            logger.warning("discovery failed", metadata: ["medium": "\(medium)", "error": "\(error)"])
        case .connectionRequested(let endpointID, let context, let code, let isIncoming):
            connectionRequested(endpointID, info: Array(context), pin: code.digits, isIncoming: isIncoming)
        case .stateChanged(let endpointID, let state, let error):
            switch state {
            case .connected:
                guard var session = sessions[endpointID] else { return }
                let actions = session.machine.connected()
                sessions[endpointID] = session
                fanOut.yield(.connected(session.peer, pin: session.pin ?? ""))
                perform(actions, endpointID)
            case .disconnected, .rejected:
                connectionEnded(endpointID, cause: error)
            case .connecting:
                break
            }
        case .mediumChanged, .reconnecting, .reconnected:
            break
        case .payloadFailed(let endpointID, let payloadID, let reason, let isOutgoing):
            // The payload's failure update follows and ends the share; this only says why.
            logger.info("payload failed", metadata: [
                "endpoint_id": "\(endpointID)", "payload_id": "\(payloadID)", "outgoing": "\(isOutgoing)",
                "reason": "\(reason)",
            ])
        case .bytesReceived(let endpointID, let payloadID, let data):
            guard var session = sessions[endpointID] else { return }
            var space: Int64?
            if case .receiver = role { space = freeSpace() }
            if session.offer?.payloadIDs.contains(payloadID) == true {
                session.progress[payloadID] = Int64(data.count)
            }
            let actions = session.machine.receivedBytes(payloadID: payloadID, Array(data), freeSpace: space)
            sessions[endpointID] = session
            perform(actions, endpointID)
        case .fileStarted(let endpointID, let payloadID, _, let total):
            guard var session = sessions[endpointID] else { return }
            let actions = session.machine.fileStarted(payloadID: payloadID, totalSize: total)
            sessions[endpointID] = session
            perform(actions, endpointID)
        case .fileReceived(let endpointID, let payloadID, let url, _):
            guard var session = sessions[endpointID] else { return }
            session.receivedURLs[payloadID] = url
            let actions = session.machine.payloadFinished(payloadID: payloadID, success: true)
            sessions[endpointID] = session
            perform(actions, endpointID)
        case .streamReceived(let endpointID, let payloadID, _):
            // Quick Share has no streams: a stream payload was not announced.
            logger.notice("canceling a stream payload", metadata: ["endpoint_id": "\(endpointID)", "payload_id": "\(payloadID)"])
            outbox.enqueue { [manager] in await manager.cancel(payloadID) }
        case .transferUpdate(let endpointID, let payloadID, let update, let kind, let isOutgoing, let bytes, _):
            transferUpdate(endpointID, payloadID: payloadID, update: update, kind: kind, isOutgoing: isOutgoing, bytes: bytes)
        }
    }

    private func connectionRequested(_ endpointID: String, info: [UInt8], pin: String, isIncoming: Bool) {
        if isIncoming {
            guard case .receiver(let limits) = role, sessions[endpointID] == nil else {
                outbox.enqueue { [manager] in try? await manager.reject(endpointID) }
                return
            }
            guard let device = QuickShareDevice(endpointID: endpointID, endpointInfo: info) else {
                logger.notice("rejecting a connection whose endpoint info is not Quick Share's", metadata: [
                    "endpoint_id": "\(endpointID)", "endpoint_info": "\(Hex.encode(info))",
                ])
                outbox.enqueue { [manager] in try? await manager.reject(endpointID) }
                return
            }
            let machine = QuickShareSessionMachine(
                role: .receiver(limits: limits), pairedKeyEncryption: .randomPairedKeyEncryption(using: &random))
            sessions[endpointID] = Session(machine: machine, peer: device, pin: pin)
        } else {
            guard sessions[endpointID] != nil else {
                outbox.enqueue { [manager] in try? await manager.reject(endpointID) }
                return
            }
            sessions[endpointID]?.pin = pin
        }
        // Quick Share accepts every connection at this level; the user decides on the introduction.
        outbox.enqueue { [manager, logger] in
            do {
                try await manager.accept(endpointID)
            } catch {
                logger.notice("accepting the connection failed", metadata: ["endpoint_id": "\(endpointID)", "error": "\(error)"])
            }
        }
    }

    private func transferUpdate(
        _ endpointID: String, payloadID: Int64, update: TransferUpdate, kind: PayloadKind, isOutgoing: Bool, bytes: Int64
    ) {
        guard var session = sessions[endpointID] else { return }
        let tracked = isOutgoing ? session.plan?.sources[payloadID] != nil : session.offer?.payloadIDs.contains(payloadID) == true
        guard tracked else {
            // A file the engine refused because nobody announced it (the naming hook said no): a violation.
            if !isOutgoing, kind == .file, case .receiver = role {
                let actions = session.machine.fileStarted(payloadID: payloadID, totalSize: -1)
                sessions[endpointID] = session
                perform(actions, endpointID)
            }
            return
        }
        var actions: [QuickShareSessionMachine.Action] = []
        switch update {
        case .progress(let completed, _):
            session.progress[payloadID] = completed
        case .success:
            session.progress[payloadID] = bytes
            if isOutgoing {
                if session.outgoingInFlight == payloadID { session.outgoingInFlight = nil }
                actions = session.machine.payloadFinished(payloadID: payloadID, success: true)
            }
        case .failure, .canceled:
            if isOutgoing, session.outgoingInFlight == payloadID { session.outgoingInFlight = nil }
            actions = session.machine.payloadFinished(payloadID: payloadID, success: false)
        }
        let moved = session.progress.values.reduce(0, +)
        sessions[endpointID] = session
        if !session.machine.isFinished || actions.contains(where: { if case .finish = $0 { true } else { false } }) {
            fanOut.yield(.progress(endpointID: endpointID, bytes: moved, totalBytes: session.totalBytes))
        }
        perform(actions, endpointID)
        if session.disconnectPending, session.outgoingInFlight == nil {
            connectionEnded(endpointID)
        }
    }

    private func connectionEnded(_ endpointID: String, cause: NearbyError? = nil) {
        guard var session = sessions[endpointID] else { return }
        if let cause { session.disconnectCause = cause }
        cancelTimer(TimerKey(endpointID: endpointID, kind: .linger))
        if session.outgoingInFlight != nil, !session.machine.isFinished, !session.disconnectPending {
            // The engine reports the payload's final status right after; take it first (its last chunk may have
            // been the receiver's reason to hang up).
            session.disconnectPending = true
            sessions[endpointID] = session
            schedule(TimerKey(endpointID: endpointID, kind: .disconnectWait), after: Self.disconnectWait)
            return
        }
        cancelTimer(TimerKey(endpointID: endpointID, kind: .disconnectWait))
        let actions = session.machine.disconnected(cause: session.disconnectCause)
        sessions[endpointID] = session
        perform(actions, endpointID)
        sessions[endpointID] = nil
        cancelTimers(of: endpointID)
        fileNames.withLock { $0[endpointID] = nil }
    }

    // MARK: - Actions

    private func perform(_ actions: [QuickShareSessionMachine.Action], _ endpointID: String) {
        for action in actions {
            perform(action, endpointID)
        }
    }

    private func perform(_ action: QuickShareSessionMachine.Action, _ endpointID: String) {
        let manager = self.manager
        let logger = self.logger
        switch action {
        case .send(let frame):
            let bytes = Data(frame.bytes)
            logger.debug("sending \(frame.name)", metadata: ["endpoint_id": "\(endpointID)"])
            outbox.enqueue {
                do {
                    try await manager.send(bytes, to: endpointID)
                } catch {
                    logger.notice("sending \(frame.name) failed", metadata: ["endpoint_id": "\(endpointID)", "error": "\(error)"])
                }
            }
        case .askUser(let offer):
            guard var session = sessions[endpointID] else { return }
            session.offer = offer
            session.totalBytes = offer.totalFileBytes + offer.texts.reduce(0) { $0 + $1.size }
            sessions[endpointID] = session
            let share = QuickShareIncomingShare(sender: session.peer, pin: session.pin ?? "", offer: offer)
            fanOut.yield(.offerReceived(share))
            offerHandler?(share)
        case .expectPayloads(let offer):
            let names = Dictionary(offer.files.map { ($0.payloadID, ($0.name, $0.parentFolder)) }, uniquingKeysWith: { a, _ in a })
            fileNames.withLock { $0[endpointID] = names }
        case .peerAccepted:
            fanOut.yield(.accepted(endpointID: endpointID))
        case .sendPayload(let payloadID):
            guard let source = sessions[endpointID]?.plan?.sources[payloadID] else { return }
            sessions[endpointID]?.outgoingInFlight = payloadID
            outbox.enqueue { [weak self] in
                do {
                    switch source {
                    case .file(let url, let name):
                        try await manager.sendResource(at: url, withName: name, to: endpointID, id: payloadID)
                    case .bytes(let bytes):
                        try await manager.send(Data(bytes), to: endpointID, id: payloadID)
                    }
                } catch {
                    logger.warning("cannot send payload", metadata: ["payload_id": "\(payloadID)", "error": "\(error)"])
                    await self?.payloadDidNotStart(endpointID, payloadID: payloadID)
                }
            }
        case .cancelPayloads(let ids):
            outbox.enqueue {
                for id in ids { await manager.cancel(id) }
            }
        case .deliverText(let text, let content):
            fanOut.yield(.textReceived(endpointID: endpointID, text, text: content))
        case .deliverWifiCredentials(let credentials):
            fanOut.yield(.wifiCredentialsReceived(endpointID: endpointID, credentials))
        case .deliverFile(let file):
            guard let url = sessions[endpointID]?.receivedURLs[file.payloadID] else { return }
            fanOut.yield(.fileReceived(endpointID: endpointID, file, url: url))
        case .setDeadline(let deadline):
            deadlines[endpointID] = deadline
            schedule(TimerKey(endpointID: endpointID, kind: .deadline), after: deadline.duration)
        case .clearDeadline:
            deadlines[endpointID] = nil
            cancelTimer(TimerKey(endpointID: endpointID, kind: .deadline))
        case .finish(let outcome):
            fileNames.withLock { $0[endpointID] = nil }
            if let session = sessions[endpointID], outcome == .received || outcome == .sent(confirmed: true)
                || outcome == .sent(confirmed: false)
            {
                // Everything moved: the last progress says so, whatever updates the engine thinned out.
                fanOut.yield(.progress(endpointID: endpointID, bytes: session.totalBytes, totalBytes: session.totalBytes))
            }
            let result = Self.result(outcome)
            logger.info("share ended", metadata: ["endpoint_id": "\(endpointID)", "result": "\(result)"])
            fanOut.yield(.finished(endpointID: endpointID, result))
        case .disconnect(let delay):
            if delay == .zero {
                outbox.enqueue { await manager.disconnect(from: endpointID) }
            } else {
                schedule(TimerKey(endpointID: endpointID, kind: .linger), after: delay)
            }
        }
    }

    private func payloadDidNotStart(_ endpointID: String, payloadID: Int64) {
        guard var session = sessions[endpointID] else { return }
        if session.outgoingInFlight == payloadID { session.outgoingInFlight = nil }
        let actions = session.machine.payloadFinished(payloadID: payloadID, success: false)
        sessions[endpointID] = session
        perform(actions, endpointID)
        if session.disconnectPending { connectionEnded(endpointID) }
    }

    static func result(_ outcome: QuickShareSessionMachine.Outcome) -> QuickShareResult {
        switch outcome {
        case .received: .completed(confirmed: true)
        case .sent(let confirmed): .completed(confirmed: confirmed)
        case .rejected: .rejected
        case .refused(let refusal): .refused(status: QuickShareResponseStatus(refusal.status), reason: refusal.reason)
        case .declined(let status):
            status == .reject ? .rejected : .refused(status: QuickShareResponseStatus(status), reason: nil)
        case .canceled(let byPeer): .canceled(byPeer: byPeer)
        case .failed(let error): .failed(error)
        }
    }

    // MARK: - Timers

    private func schedule(_ key: TimerKey, after delay: Duration) {
        timers.removeValue(forKey: key)?.task.cancel()
        timerGeneration += 1
        let generation = timerGeneration
        let clock = self.clock
        // Owner: this driver (`timers`); it ends when it fires or is cancelled, and `stop()` awaits it.
        let task = Task { [weak self] in
            do {
                try await clock.sleep(for: delay)
            } catch {
                return
            }
            await self?.timerFired(key, generation: generation)
        }
        timers[key] = (generation, task)
    }

    private func cancelTimer(_ key: TimerKey) {
        timers.removeValue(forKey: key)?.task.cancel()
    }

    private func cancelTimers(of endpointID: String) {
        for kind in [TimerKind.deadline, .linger, .disconnectWait] {
            cancelTimer(TimerKey(endpointID: endpointID, kind: kind))
        }
        deadlines[endpointID] = nil
    }

    private func timerFired(_ key: TimerKey, generation: Int) {
        guard timers[key]?.generation == generation else { return }
        timers[key] = nil
        let endpointID = key.endpointID
        switch key.kind {
        case .deadline:
            guard let deadline = deadlines.removeValue(forKey: endpointID), var session = sessions[endpointID] else { return }
            let actions = session.machine.deadlinePassed(deadline)
            sessions[endpointID] = session
            perform(actions, endpointID)
        case .linger:
            let manager = self.manager
            outbox.enqueue { await manager.disconnect(from: endpointID) }
        case .disconnectWait:
            guard var session = sessions[endpointID] else { return }
            session.outgoingInFlight = nil
            sessions[endpointID] = session
            connectionEnded(endpointID)
        }
    }
}
