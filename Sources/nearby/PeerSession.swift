import Foundation
import NearbyConnections
import NearbyWire

/// The event loop shared by `advertise`, `receive` and `send`: prints connection and payload events, decides on
/// connections, and reports received payloads with their digests.
///
/// Our own outgoing requests are accepted at once (running the command is the consent); an incoming one is
/// accepted with `--accept`, else asked about on a terminal (showing the code), else rejected, and the messages
/// say which side refused.
actor PeerSession {
    enum Decision: Sendable {
        case accept
        case askOrReject
    }

    let manager: ConnectionManager
    let output: EventOutput
    let decision: Decision
    let echo: Bool
    /// Where received streams go (`--stream-to`): the first one is written there, later ones are cancelled.
    let streamTarget: StreamTarget?
    private var streamTargetTaken = false
    private var states: [String: ConnectionState] = [:]
    /// Peers we rejected (so `rejected` can say who refused).
    private var rejectedHere: Set<String> = []
    /// The peers' names (endpoint info), for readable lines.
    private var peerNames: [String: String] = [:]
    private var outgoingResults: [PayloadID: TransferUpdate] = [:]
    private var failureReasons: [PayloadID: String] = [:]
    /// Incoming files' names with their folders, from `fileStarted` until `fileReceived` (or the failure).
    private var fileNames: [PayloadID: String] = [:]
    private var waiters: [PayloadID: CheckedContinuation<TransferUpdate, Never>] = [:]
    private var stateWaiters: [(String, CheckedContinuation<ConnectionState, Never>)] = []
    /// Payloads that started (registered outgoing, or with progress) and have not finished: what SIGUSR1 cancels.
    private var inFlight: Set<PayloadID> = []
    /// Payloads received whole so far (bytes, files, streams read to their end), from every peer.
    private var receivedCount = 0
    /// Incoming payloads that failed or were cancelled, from every peer.
    private(set) var failedIncoming = 0
    private var receivedWaiters: [(count: Int, waiter: CheckedContinuation<Void, Never>)] = []
    /// Runs (in a task of its own) for every peer once it is connected: `advertise` sends its payloads there.
    private var onConnected: (@Sendable (String) async -> Void)?
    /// Stream readers under way: each ends when its stream does (or the connection does); `finishStreams()` waits.
    private var streamReaders: [Task<Void, Never>] = []
    /// Peers that were connected and are gone, and who waits for the first of them.
    private var departed: [String] = []
    private var departureWaiters: [CheckedContinuation<String, Never>] = []

    init(
        manager: ConnectionManager, output: EventOutput, decision: Decision, echo: Bool = false,
        streamTarget: StreamTarget? = nil
    ) {
        self.manager = manager
        self.output = output
        self.decision = decision
        self.echo = echo
        self.streamTarget = streamTarget
    }

    /// Handles one event.
    func handle(_ event: ConnectionEvent) async {
        switch event {
        case .connectionRequested(let id, let context, let code, let incoming):
            peerNames[id] = Self.display(context)
            output.event(
                "connection_initiated",
                ConnectionInitiatedEvent(
                    endpointID: id, endpointInfoHex: Hex.encode(context), digits: code.digits, token: code.token,
                    incoming: incoming),
                human: "connection \(incoming ? "from" : "to") \(peer(id)): code \(code.digits), token \(code.token)")
            let accepted = incoming ? await decide(id, code: code, context: context) : true
            do {
                if accepted {
                    try await manager.accept(id)
                } else {
                    rejectedHere.insert(id)
                    if decision == .askOrReject && isatty(STDIN_FILENO) != 1 {
                        EventOutput.warn(
                            "refusing the connection from \(peer(id)): no --accept, and no terminal to ask on")
                    }
                    try await manager.reject(id)
                }
            } catch {
                EventOutput.warn(ErrorText.describe(error))
            }
        case .stateChanged(let id, let state, let error):
            let previous = states[id]
            states[id] = state
            switch state {
            case .connected:
                output.event("connected", EndpointEvent(endpointID: id), human: "connected to \(peer(id))")
                if let onConnected { Task { await onConnected(id) } }
            case .rejected:
                let here = rejectedHere.contains(id)
                output.event(
                    "rejected", RejectedEvent(endpointID: id, by: here ? "local" : "peer"),
                    human: here ? "refused the connection from \(peer(id))" : "\(peer(id)) refused the connection")
            case .disconnected:
                output.event("disconnected", DisconnectedEvent(endpointID: id, error: error?.message),
                             human: "disconnected from \(peer(id))" + (error.map { ": \($0.message)" } ?? ""))
                if previous == .connected {
                    departed.append(id)
                    for waiter in departureWaiters { waiter.resume(returning: id) }
                    departureWaiters.removeAll()
                }
            case .connecting: break
            }
            resumeStateWaiters(id, state)
        case .mediumChanged(let id, let medium):
            output.event(
                "medium_changed", MediumChangedEvent(endpointID: id, medium: medium.rawValue),
                human: "connection with \(peer(id)) moved to \(medium)")
        case .reconnecting(let id, let error):
            output.event(
                "reconnecting", ReconnectingEvent(endpointID: id, error: error.message),
                human: "the link with \(peer(id)) broke (\(error.message)); reconnecting")
        case .reconnected(let id, let medium):
            output.event(
                "reconnected", MediumChangedEvent(endpointID: id, medium: medium.rawValue),
                human: "reconnected to \(peer(id)) over \(medium)")
        case .bytesReceived(let id, let payloadID, let data):
            _ = output.finishedTransfer(payloadID)
            let content = BytesContent(data)
            output.event(
                "payload_received",
                PayloadReceivedEvent(
                    endpointID: id, payloadID: String(payloadID), type: "bytes", size: Int64(data.count),
                    sha256: Digests.sha256(data), text: content.text, hex: content.hex, truncated: content.truncated),
                human: "received a message from \(peer(id)): \(Self.display(data))")
            noteReceived()
            if echo {
                _ = try? await manager.send(data, to: id)
            }
        case .fileStarted(_, let payloadID, let name, _):
            output.name(payloadID, name)
            fileNames[payloadID] = name
        case .fileReceived(let id, let payloadID, let url, let lastComponent):
            // The sender's name with its folders (`photos/2024/a.jpg`), as sanitized when the file started.
            let name = fileNames.removeValue(forKey: payloadID) ?? lastComponent
            let (digest, size) = (try? Digests.sha256(fileAt: url)) ?? ("", 0)
            let (shownName, seconds) = output.finishedTransfer(payloadID)
            output.event(
                "payload_received",
                PayloadReceivedEvent(
                    endpointID: id, payloadID: String(payloadID), type: "file", size: size, sha256: digest,
                    path: url.path, name: name),
                human: "received \(shownName ?? name) from \(peer(id)): \(EventOutput.summary(size: size, seconds: seconds)), "
                    + "saved as \(url.path), sha256 \(digest)")
            noteReceived()
        case .streamReceived(let id, let payloadID, let stream):
            output.name(payloadID, "stream")
            var destination: StreamTarget?
            if let streamTarget {
                if streamTargetTaken {
                    EventOutput.warn("cancelling stream \(payloadID) from \(peer(id)): --stream-to takes one stream")
                    await manager.cancel(payloadID)
                    return
                }
                streamTargetTaken = true
                destination = streamTarget
            }
            streamReaders.append(Task { await self.read(stream, payloadID: payloadID, from: id, into: destination) })
        case .payloadFailed(let id, let payloadID, let reason, let outgoing):
            failureReasons[payloadID] = reason.message
            output.event(
                "payload_failed",
                PayloadFailedEvent(endpointID: id, payloadID: String(payloadID), incoming: !outgoing, reason: reason.message),
                human: "payload \(payloadID) \(outgoing ? "to" : "from") \(peer(id)) failed: \(reason.message)")
        case .transferUpdate(let id, let payloadID, let update, let kind, let outgoing, let bytes, let total):
            output.transfer(
                endpointID: id, payloadID: payloadID, kind: kind, outgoing: outgoing, status: Self.status(update),
                bytes: bytes, total: total)
            if update == .progress(completed: bytes, total: total) {
                inFlight.insert(payloadID)
            } else {
                inFlight.remove(payloadID)
                if !outgoing && update != .success {
                    failedIncoming += 1
                    fileNames[payloadID] = nil
                }
            }
            if outgoing, update != .progress(completed: bytes, total: total) {
                outgoingResults[payloadID] = update
                waiters.removeValue(forKey: payloadID)?.resume(returning: update)
            }
        case .endpointFound, .endpointLost, .discoveryFailed:
            break
        }
    }

    /// Reads a received stream to its end: hashes it, writes it to `destination` if any, and prints
    /// `payload_received` (or why it broke). Off the actor: writing to a slow pipe must not hold up other events.
    private nonisolated func read(
        _ stream: IncomingByteStream, payloadID: PayloadID, from id: String, into destination: StreamTarget?
    ) async {
        let peer = await self.peer(id)
        var running = Digests.Running()
        let writer: StreamWriter?
        do {
            writer = try destination.map { try StreamWriter(target: $0) }
        } catch {
            EventOutput.warn(ErrorText.describe(error))
            await manager.cancel(payloadID)
            await noteFailedIncoming()
            return
        }
        do {
            for try await chunk in stream {
                running.update(chunk)
                try writer?.write(chunk)
            }
            let path = try writer?.finish()
            let (_, seconds) = output.finishedTransfer(payloadID)
            let digest = running.finish()
            output.event(
                "payload_received",
                PayloadReceivedEvent(
                    endpointID: id, payloadID: String(payloadID), type: "stream", size: running.size,
                    sha256: digest, path: path),
                human: "received a stream from \(peer): \(EventOutput.summary(size: running.size, seconds: seconds))"
                    + (path.map { ", saved as \($0)" } ?? "") + ", sha256 \(digest)")
            await noteReceived()
        } catch {
            writer?.abort()
            if error is StreamWriter.Failure {
                await manager.cancel(payloadID)
            }
            await noteFailedIncoming()
            EventOutput.warn("stream \(payloadID) from \(peer) broke: \(ErrorText.describe(error))")
        }
    }

    private func noteFailedIncoming() {
        failedIncoming += 1
    }

    /// Waits until every received stream was read to its end (or broke).
    func finishStreams() async {
        while let reader = streamReaders.popLast() { await reader.value }
    }

    /// `kiosk (ABCD)`: a peer's name and endpoint ID, or the ID alone before its name is known.
    func peer(_ id: String) -> String {
        guard let name = peerNames[id], !name.isEmpty else { return id }
        return "\(name) (\(id))"
    }

    /// Why a payload failed, when known (the receiver's reason for an outgoing one).
    func failureReason(_ id: PayloadID) -> String? { failureReasons[id] }

    /// Remembers that an outgoing payload started (SIGUSR1 cancels it).
    func registerOutgoing(_ id: PayloadID) {
        if outgoingResults[id] == nil { inFlight.insert(id) }
    }

    /// Cancels every payload in flight, in either direction (SIGUSR1).
    func cancelInFlight() async {
        for id in inFlight.sorted() {
            output.event(
                "cancel_requested", CancelRequestedEvent(payloadID: String(id)), human: "cancelling payload \(id)")
            await manager.cancel(id)
        }
    }

    /// Sets what runs for every peer once it is connected.
    func setOnConnected(_ hook: @escaping @Sendable (String) async -> Void) {
        onConnected = hook
    }

    /// Returns once `count` payloads were received whole, from all peers together.
    func waitForReceived(atLeast count: Int) async {
        if receivedCount >= count { return }
        await withCheckedContinuation { receivedWaiters.append((count, $0)) }
    }

    /// Payloads received whole so far.
    var received: Int { receivedCount }

    private func noteReceived() {
        receivedCount += 1
        receivedWaiters.removeAll { entry in
            guard entry.count <= receivedCount else { return false }
            entry.waiter.resume()
            return true
        }
    }

    /// Waits until an outgoing payload finishes.
    func waitForOutgoing(_ id: PayloadID) async -> TransferUpdate {
        if let result = outgoingResults[id] { return result }
        return await withCheckedContinuation { waiters[id] = $0 }
    }

    /// Waits until the endpoint is connected, rejected or disconnected.
    func waitForSettled(_ id: String) async -> ConnectionState {
        if let state = states[id], state != .connecting { return state }
        return await withCheckedContinuation { stateWaiters.append((id, $0)) }
    }

    func state(of id: String) -> ConnectionState? { states[id] }

    /// Returns the first peer that was connected and disconnected (at once if one already did).
    func waitForDeparture() async -> String {
        if let first = departed.first { return first }
        return await withCheckedContinuation { departureWaiters.append($0) }
    }

    /// Whether we refused the connection with `id` (rather than the peer).
    func rejectedLocally(_ id: String) -> Bool { rejectedHere.contains(id) }

    private func resumeStateWaiters(_ id: String, _ state: ConnectionState) {
        guard state != .connecting else { return }
        stateWaiters.removeAll { waiter in
            guard waiter.0 == id else { return false }
            waiter.1.resume(returning: state)
            return true
        }
    }

    private func decide(_ id: String, code: VerificationCode, context: Data) async -> Bool {
        switch decision {
        case .accept:
            return true
        case .askOrReject:
            guard isatty(STDIN_FILENO) == 1 else { return false }
            FileHandle.standardError.write(Data(PeerText.escapedForTerminal(
                "Accept the connection from \(peer(id)), code \(code.digits)? [y/N] ").utf8))
            let answer = await withCheckedContinuation { continuation in
                Thread.detachNewThread { continuation.resume(returning: readLine() ?? "") }
            }
            return answer.lowercased().hasPrefix("y")
        }
    }

    static func status(_ update: TransferUpdate) -> String {
        switch update {
        case .progress: "in_progress"
        case .success: "success"
        case .failure: "failure"
        case .canceled: "canceled"
        }
    }

    /// Peer-supplied bytes for a human line: the text when they are UTF-8 (control characters and bidirectional
    /// overrides escaped), hex otherwise.
    static func display(_ data: Data) -> String {
        if let text = String(data: data, encoding: .utf8) { return PeerText.escapedForTerminal(text) }
        return Hex.encode(data)
    }
}
