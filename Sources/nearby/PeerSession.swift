import Foundation
import NearbyConnections
import NearbyWire

/// The event loop shared by `advertise` and `send`: prints connection and payload events, decides on
/// connections, and reports received payloads with their digests.
actor PeerSession {
    enum Decision: Sendable {
        case accept
        case askOrReject
    }

    let manager: ConnectionManager
    let output: EventOutput
    let decision: Decision
    let echo: Bool
    private var states: [String: ConnectionState] = [:]
    private var sentDigests: [PayloadID: (type: String, size: Int64, sha256: String)] = [:]
    private var outgoingResults: [PayloadID: TransferUpdate] = [:]
    private var waiters: [PayloadID: CheckedContinuation<TransferUpdate, Never>] = [:]
    private var stateWaiters: [(String, CheckedContinuation<ConnectionState, Never>)] = []
    /// Payloads that started (registered outgoing, or with progress) and have not finished: what SIGUSR1 cancels.
    private var inFlight: Set<PayloadID> = []
    /// Payloads received whole so far (bytes, files, streams read to their end), from every peer.
    private var receivedCount = 0
    private var receivedWaiters: [(count: Int, waiter: CheckedContinuation<Void, Never>)] = []
    /// Runs (in a task of its own) for every peer once it is connected: `advertise` sends its payloads there.
    private var onConnected: (@Sendable (String) async -> Void)?

    init(manager: ConnectionManager, output: EventOutput, decision: Decision, echo: Bool = false) {
        self.manager = manager
        self.output = output
        self.decision = decision
        self.echo = echo
    }

    /// Handles one event; returns `false` when the event loop should stop.
    func handle(_ event: ConnectionEvent) async {
        switch event {
        case .connectionRequested(let id, let context, let code, let incoming):
            output.event(
                "connection_initiated",
                ConnectionInitiatedEvent(
                    endpointID: id, endpointInfoHex: Hex.encode(context), digits: code.digits, token: code.token,
                    incoming: incoming),
                human: "connection \(incoming ? "from" : "to") \(id) (\(Self.display(context))): code \(code.digits), token \(code.token)")
            let accepted = await decide(id, code: code, context: context)
            do {
                if accepted {
                    try await manager.accept(id)
                } else {
                    EventOutput.warn("rejecting the connection from \(id) (no --accept and no terminal to ask)")
                    try await manager.reject(id)
                }
            } catch {
                EventOutput.warn("\(error)")
            }
        case .stateChanged(let id, let state, let error):
            states[id] = state
            switch state {
            case .connected:
                output.event("connected", EndpointEvent(endpointID: id), human: "connected to \(id)")
                if let onConnected { Task { await onConnected(id) } }
            case .rejected: output.event("rejected", EndpointEvent(endpointID: id), human: "connection with \(id) rejected")
            case .disconnected:
                output.event("disconnected", DisconnectedEvent(endpointID: id, error: error?.message),
                             human: "disconnected from \(id)" + (error.map { ": \($0.message)" } ?? ""))
            case .connecting: break
            }
            resumeStateWaiters(id, state)
        case .mediumChanged(let id, let medium):
            output.event(
                "medium_changed", MediumChangedEvent(endpointID: id, medium: medium.rawValue),
                human: "connection with \(id) moved to \(medium)")
        case .reconnecting(let id, let error):
            output.event(
                "reconnecting", ReconnectingEvent(endpointID: id, error: error.message),
                human: "the link with \(id) broke (\(error.message)); reconnecting")
        case .reconnected(let id, let medium):
            output.event(
                "reconnected", MediumChangedEvent(endpointID: id, medium: medium.rawValue),
                human: "reconnected to \(id) over \(medium)")
        case .bytesReceived(let id, let payloadID, let data):
            output.event(
                "payload_received",
                PayloadReceivedEvent(
                    endpointID: id, payloadID: payloadID, type: "bytes", size: Int64(data.count),
                    sha256: Digests.sha256(data)),
                human: "received \(data.count) bytes from \(id): \(Self.display(data))")
            noteReceived()
            if echo {
                _ = try? await manager.send(data, to: id)
            }
        case .fileReceived(let id, let payloadID, let url, _):
            let (digest, size) = (try? Digests.sha256(fileAt: url)) ?? ("", 0)
            output.event(
                "payload_received",
                PayloadReceivedEvent(
                    endpointID: id, payloadID: payloadID, type: "file", size: size, sha256: digest, path: url.path),
                human: "received file \(url.path) (\(EventOutput.size(size)), sha256 \(digest))")
            noteReceived()
        case .streamReceived(let id, let payloadID, let stream):
            let output = self.output
            Task {
                var running = Digests.Running()
                do {
                    for try await chunk in stream { running.update(chunk) }
                    output.event(
                        "payload_received",
                        PayloadReceivedEvent(
                            endpointID: id, payloadID: payloadID, type: "stream", size: running.size,
                            sha256: running.finish()),
                        human: "received a stream of \(EventOutput.size(running.size)) from \(id)")
                    self.noteReceived()
                } catch {
                    EventOutput.warn("stream \(payloadID) broke: \(error)")
                }
            }
        case .transferUpdate(let id, let payloadID, let update, _, let outgoing, let bytes, let total):
            output.transfer(endpointID: id, payloadID: payloadID, status: Self.status(update), bytes: bytes, total: total)
            if update == .progress(completed: bytes, total: total) {
                inFlight.insert(payloadID)
            } else {
                inFlight.remove(payloadID)
            }
            if outgoing, update != .progress(completed: bytes, total: total) {
                outgoingResults[payloadID] = update
                waiters.removeValue(forKey: payloadID)?.resume(returning: update)
            }
        case .endpointFound, .endpointLost, .discoveryFailed, .fileStarted:
            break
        }
    }

    /// Remembers what a payload is, for its `payload_sent` line.
    func registerOutgoing(_ id: PayloadID, type: String, size: Int64, sha256: String) {
        sentDigests[id] = (type, size, sha256)
        if outgoingResults[id] == nil { inFlight.insert(id) }
    }

    /// Cancels every payload in flight, in either direction (SIGUSR1).
    func cancelInFlight() async {
        for id in inFlight.sorted() {
            output.event("cancel_requested", CancelRequestedEvent(payloadID: id), human: "cancelling payload \(id)")
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
                "Accept the connection with \(id) (\(Self.display(context))), code \(code.digits)? [y/N] ").utf8))
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
