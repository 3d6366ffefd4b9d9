import Foundation
import Logging
import NearbyWire

/// Sends an endpoint's outgoing payloads: reads each in chunks, queues its frames on the writer (held while a
/// bandwidth upgrade closes the ``SendGate``), reports progress and the outcome, and honours cancellation from our
/// app and from the peer.
///
/// Fairness: every FILE and STREAM payload has a task of its own that queues one frame at a time on the writer and
/// waits until the writer took it, so the writer's FIFO serves the ready payloads round-robin, chunk by chunk: a
/// small file sent while a large one streams finishes after a few of the large one's chunks, not after all of them.
/// At most ``maxInterleavedPayloads`` FILE and STREAM payloads send at once (``SendSlots``, first come first
/// served), so the peer never holds more open than that. BYTES payloads (one chunk each) keep one lane and go out
/// in the order they were sent, so they arrive in order.
/// Other endpoints have sessions, writers and channels of their own and never wait for this one.
///
/// It never hops onto the session: its state sits behind a lock, and the session only tells it the peer's ID,
/// the peer's control messages and when the connection ended (``stop()``).
package final class OutgoingPayloadSender: Sendable {
    private struct State {
        var payloads: [PayloadID: OutgoingPayloadState] = [:]
        var laneTails: [PayloadKind: CompletionSignal] = [:]
        var stopped = false
        /// Whether a payload counts as sent only once the peer acknowledged it (a swift-nearby peer).
        var awaitsAcks = false
        /// Auto-reconnect: the channel broke; frames are not queued until the receiver said where to go on.
        var suspended = false
    }

    private enum Check {
        case proceed
        case stop(TransferStatus, notifyPeer: ProtoPayloadTransferFrame.ControlMessage.EventType?)
        /// Auto-resume: go on from the receiver's next chunk.
        case rewind(offset: Int64, index: Int32)
    }

    /// How many FILE and STREAM payloads of one endpoint interleave at once; later ones wait for a slot.
    package static let maxInterleavedPayloads = 8

    private let writer: OutboundFrameWriter
    private let slots = SendSlots(count: OutgoingPayloadSender.maxInterleavedPayloads)
    private let gate: SendGate
    /// The chunk size of the current medium (a bandwidth upgrade changes it).
    package let chunkSize: LockedValue<Int>
    /// The peer's endpoint ID, for the events.
    package let peerEndpointID = LockedValue("")
    private let state = LockedValue(State())
    /// Thins out FILE progress to one update per 50 ms per payload (``TransferUpdateThrottle``).
    private let throttle = LockedValue(TransferUpdateThrottle())
    private let clock: NearbyClock
    private let onEvent: @Sendable (EndpointEvent) -> Void
    private let logger: Logger

    /// - Parameter clock: The clock progress updates are thinned out by.
    package init(
        writer: OutboundFrameWriter, gate: SendGate, chunkSize: Int, logger: Logger, clock: NearbyClock = .continuous,
        onEvent: @escaping @Sendable (EndpointEvent) -> Void
    ) {
        self.writer = writer
        self.gate = gate
        self.chunkSize = LockedValue(chunkSize)
        self.logger = logger
        self.clock = clock
        self.onEvent = onEvent
    }

    /// Starts sending a payload.
    package func send(_ source: OutgoingPayloadSource, id: PayloadID) throws(NearbyError) {
        guard id != 0 else { throw NearbyError(.invalidArgument, "payload ID 0 is not allowed") }
        guard !state.withLock({ $0.payloads[id] != nil }) else {
            throw NearbyError(.invalidArgument, "payload \(id) is already being sent")
        }
        if case .bytes(let bytes) = source, bytes.count > PayloadLimits.maxBytesPayloadSize {
            throw NearbyError(
                .invalidArgument,
                "a bytes payload holds at most \(PayloadLimits.maxBytesPayloadSize) bytes, got \(bytes.count); send a file or stream")
        }
        let reader = try PayloadChunkReader(source: source, chunkSize: chunkSize.withLock { $0 })
        // Only BYTES wait for the payload before them (their order is their delivery order): each takes its place
        // in the lane under the lock, and its task, started after the lock, waits for the one before.
        let done = CompletionSignal()
        let previous = state.withLock { state -> CompletionSignal? in
            state.payloads[id] = OutgoingPayloadState(kind: source.kind)
            guard source.kind == .bytes else { return nil }
            defer { state.laneTails[source.kind] = done }
            return state.laneTails[source.kind]
        }
        startSending(id, reader: reader, after: previous, done: done)
    }

    /// Starts the task that sends a payload: from its first chunk, or, with `start`, from where the receiver goes on
    /// after a reconnect (the reader is rewound there). Owner: this sender; the task ends once every frame of the
    /// payload is queued, or the payload is canceled or failed, or the connection ended (``stop()``). A BYTES
    /// payload waits for `previous` (the one before it in its lane) and signals `done` when its task ends. Called
    /// after the state's lock is released.
    private func startSending(
        _ id: PayloadID, reader: PayloadChunkReader, after previous: CompletionSignal? = nil,
        done: CompletionSignal? = nil, from start: (offset: Int64, index: Int32)? = nil
    ) {
        let slots = reader.source.kind == .bytes ? nil : self.slots
        // Owner: this sender (see above); nobody awaits it: it ends once the payload's frames are queued, or the
        // payload is canceled or failed, or `stop()` ended the connection (it then fails at its next chunk).
        Task { [reader] in
            var reader = reader
            await previous?.wait()
            await slots?.acquire()
            let parked = await self.transmit(id: id, reader: &reader, from: start)
            slots?.release()
            if !parked { reader.close() }
            done?.signal()
        }
    }

    /// Asks the payload's sender to stop; `false` if we are not sending it. A payload whose frames are all sent
    /// and that waits for the peer's acknowledgement is reported canceled at once.
    package func cancel(_ id: PayloadID) -> Bool {
        let (found, settled) = state.withLock { state -> (Bool, (OutgoingPayloadState, Int64, Int64)?) in
            guard let payload = state.payloads[id] else { return (false, nil) }
            if let waiting = payload.awaitingAck {
                state.payloads[id] = nil
                return (true, (payload, waiting.bytes, waiting.total))
            }
            state.payloads[id]?.cancelRequested = true
            return (true, nil)
        }
        if let (payload, bytes, total) = settled {
            payload.parkedReader?.close()
            report(id, kind: payload.kind, status: .canceled, bytes: bytes, total: total)
        }
        return found
    }

    /// Whether payloads count as sent only once the peer acknowledged them (``LinkTerms/awaitsPayloadAcks``).
    func awaitAcknowledgements(_ awaits: Bool) {
        state.withLock { $0.awaitsAcks = awaits }
    }

    /// The peer's PAYLOAD_ACK: a payload waiting for it succeeds.
    func acknowledged(_ id: PayloadID) {
        let settled = state.withLock { state -> (PayloadKind, Int64, Int64, PayloadChunkReader?)? in
            guard let payload = state.payloads[id] else { return nil }
            guard let waiting = payload.awaitingAck else {
                state.payloads[id]?.acknowledged = true
                return nil
            }
            state.payloads[id] = nil
            return (payload.kind, waiting.bytes, waiting.total, payload.parkedReader)
        }
        if let (kind, bytes, total, reader) = settled {
            reader?.close()
            report(id, kind: kind, status: .success, bytes: bytes, total: total)
        }
    }

    /// Auto-reconnect: the channel broke; no frame is queued until ``unsuspend()`` (frames read meanwhile are sent
    /// again from the receiver's offset).
    func suspend() {
        state.withLock { $0.suspended = true }
    }

    /// Auto-reconnect: a new channel is up; payloads go on once the gate opens.
    func unsuspend() {
        state.withLock { $0.suspended = false }
    }

    /// After a reconnect to a peer that does not resume payloads: every payload under way fails (without a frame
    /// about it: the peer never saw the rest), the connection goes on.
    func abandonUnfinished() {
        let waiting = state.withLock { state -> [(PayloadID, OutgoingPayloadState)] in
            var settled: [(PayloadID, OutgoingPayloadState)] = []
            for (id, payload) in state.payloads {
                if payload.awaitingAck != nil {
                    settled.append((id, payload))
                    state.payloads[id] = nil
                } else {
                    state.payloads[id]?.peerEvent = .payloadError
                }
            }
            return settled
        }
        for (id, payload) in waiting {
            payload.parkedReader?.close()
            report(id, kind: payload.kind, status: .failure, bytes: payload.awaitingAck?.bytes ?? 0,
                   total: payload.awaitingAck?.total ?? -1)
        }
    }

    /// Auto-resume: the payloads to ask the receiver about after a reconnect (sending, waiting to send, or waiting
    /// for the peer's acknowledgement).
    func unfinishedPayloadIDs() -> [PayloadID] {
        state.withLock { Array($0.payloads.keys) }.sorted()
    }

    /// Auto-resume: the receiver's answer about a payload we were sending when the channel broke.
    func resume(_ id: PayloadID, outcome: ProtoAutoResumeFrame.ResumeOutcome, offset: Int64, index: Int32) {
        enum Step { case none, report(PayloadKind, TransferStatus, Int64, Int64, PayloadChunkReader?), restart(PayloadChunkReader) }
        let step = state.withLock { state -> Step in
            guard var payload = state.payloads[id], !state.stopped else { return .none }
            if let waiting = payload.awaitingAck {
                switch outcome {
                case .alreadyReceived:
                    state.payloads[id] = nil
                    return .report(payload.kind, .success, waiting.bytes, waiting.total, payload.parkedReader)
                case .notResumable:
                    state.payloads[id] = nil
                    return .report(payload.kind, .failure, waiting.bytes, waiting.total, payload.parkedReader)
                case .resumeFromOffset:
                    // The end never arrived: send again from the receiver's offset.
                    guard let reader = payload.parkedReader else { return .none }
                    payload.awaitingAck = nil
                    payload.parkedReader = nil
                    state.payloads[id] = payload
                    return .restart(reader)
                }
            }
            switch outcome {
            case .alreadyReceived: payload.receivedWhole = true
            case .notResumable: payload.peerEvent = .payloadError
            case .resumeFromOffset: payload.rewind = (offset, index)
            }
            state.payloads[id] = payload
            return .none
        }
        switch step {
        case .none:
            break
        case .report(let kind, let status, let bytes, let total, let reader):
            reader?.close()
            report(id, kind: kind, status: status, bytes: bytes, total: total)
        case .restart(let reader):
            startSending(id, reader: reader, from: (offset, index))
        }
    }

    /// Whether payload `id` is being sent (and has not ended).
    func isSending(_ id: PayloadID) -> Bool {
        state.withLock { $0.payloads[id] != nil }
    }

    /// The peer canceled or failed a payload we send. One whose frames are all sent and that waits for the peer's
    /// acknowledgement ends now (no chunk is left at which its task would notice): canceled or failed.
    func peerControl(_ id: PayloadID, event: ProtoPayloadTransferFrame.ControlMessage.EventType) {
        let settled = state.withLock { state -> (OutgoingPayloadState, Int64, Int64)? in
            guard let payload = state.payloads[id] else { return nil }
            guard let waiting = payload.awaitingAck else {
                state.payloads[id]?.peerEvent = event
                return nil
            }
            state.payloads[id] = nil
            return (payload, waiting.bytes, waiting.total)
        }
        guard let (payload, bytes, total) = settled else { return }
        payload.parkedReader?.close()
        report(id, kind: payload.kind, status: event == .payloadCanceled ? .canceled : .failure, bytes: bytes, total: total)
    }

    /// The connection ended: every payload under way fails at its next chunk, and those waiting for the peer's
    /// acknowledgement fail now.
    package func stop() {
        let unacknowledged = state.withLock { state -> [(PayloadID, OutgoingPayloadState, Int64, Int64)] in
            state.stopped = true
            let waiting = state.payloads.compactMap { id, payload in
                payload.awaitingAck.map { (id, payload, $0.bytes, $0.total) }
            }
            for (id, _, _, _) in waiting { state.payloads[id] = nil }
            return waiting
        }
        for (id, payload, bytes, total) in unacknowledged {
            payload.parkedReader?.close()
            report(id, kind: payload.kind, status: .failure, bytes: bytes, total: total)
        }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    /// Sends the payload's frames from `start`; returns whether the reader was parked (the payload waits for the
    /// peer's acknowledgement and may go on after a reconnect).
    private func transmit(id: PayloadID, reader: inout PayloadChunkReader, from start: (offset: Int64, index: Int32)?) async -> Bool {
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
        var check: Check = start.map { .rewind(offset: $0.offset, index: $0.index) } ?? self.check(id)
        while true {
            switch check {
            case .proceed:
                break
            case .stop(let status, let notifyPeer):
                if let notifyPeer {
                    await enqueue(OfflineFrames.payloadControl(header: header, event: notifyPeer, offset: offset), id: id)
                }
                finish(id, kind: kind, status: status, bytes: offset, total: totalSize)
                return false
            case .rewind(let to, let nextIndex):
                do {
                    try reader.rewind(to: to)
                } catch {
                    logger.error("resuming an outgoing payload failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                    await enqueue(OfflineFrames.payloadControl(header: header, event: .payloadError, offset: to), id: id)
                    finish(id, kind: kind, status: .failure, bytes: offset, total: totalSize)
                    return false
                }
                logger.info("resuming an outgoing payload", metadata: ["payload_id": "\(id)", "offset": "\(to)", "sent_before": "\(offset)"])
                (offset, index) = (to, nextIndex)
            }
            let chunk: Data?
            reader.chunkSize = chunkSize.withLock { $0 }
            do {
                chunk = try await reader.next()
            } catch {
                logger.error("reading an outgoing payload failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                await enqueue(OfflineFrames.payloadControl(header: header, event: .payloadError, offset: offset), id: id)
                finish(id, kind: kind, status: .failure, bytes: offset, total: totalSize)
                return false
            }
            guard let chunk else {
                if totalSize >= 0 && offset != totalSize {
                    await enqueue(OfflineFrames.payloadControl(header: header, event: .payloadError, offset: offset), id: id)
                    finish(id, kind: kind, status: .failure, bytes: offset, total: totalSize)
                    return false
                }
                // The end is a chunk of its own, with no body (peers drop a file whose last data chunk is flagged).
                let last = OfflineFrames.payloadData(header: header, offset: offset, body: nil, index: index, isLast: true)
                guard await enqueue(last, id: id) else {
                    check = self.check(id)
                    continue
                }
                return finishSent(id, kind: kind, bytes: offset, total: totalSize, reader: reader)
            }
            let frame = OfflineFrames.payloadData(header: header, offset: offset, body: chunk, index: index, isLast: false)
            offset += Int64(chunk.count)
            index += 1
            await enqueue(frame, id: id)
            report(id, kind: kind, status: .inProgress, bytes: offset, total: totalSize)
            check = self.check(id)
        }
    }

    private func check(_ id: PayloadID) -> Check {
        state.withLock { state in
            guard var payload = state.payloads[id], !state.stopped else { return .stop(.failure, notifyPeer: nil) }
            if payload.cancelRequested { return .stop(.canceled, notifyPeer: .payloadCanceled) }
            if payload.receivedWhole { return .stop(.success, notifyPeer: nil) }
            if let rewind = payload.rewind {
                payload.rewind = nil
                state.payloads[id] = payload
                return .rewind(offset: rewind.offset, index: rewind.index)
            }
            if let event = payload.peerEvent {
                return .stop(event == .payloadCanceled ? .canceled : .failure, notifyPeer: nil)
            }
            return .proceed
        }
    }

    /// Queues a frame once the gate is open; returns when the writer took it. Dropped once stopped, and when the
    /// payload is to go on from elsewhere after a reconnect (auto-resume): then it returns `false`.
    @discardableResult
    private func enqueue(_ frame: ProtoOfflineFrame, id: PayloadID) async -> Bool {
        await gate.wait()
        let (stopped, held) = state.withLock { ($0.stopped, $0.suspended || $0.payloads[id]?.rewind != nil) }
        if held { return false }
        guard !stopped else { return true }
        await writer.enqueue(writer.item(frame))
        return true
    }

    /// Every frame of the payload is queued: it succeeded, or it does once the peer acknowledges it (the reader is
    /// parked meanwhile, so that the payload can go on after a reconnect). Returns whether the reader was parked.
    private func finishSent(_ id: PayloadID, kind: PayloadKind, bytes: Int64, total: Int64, reader: PayloadChunkReader) -> Bool {
        let outcome = state.withLock { state -> TransferStatus? in
            guard !state.stopped else { return .failure }
            // A cancel (the peer's, or ours) that came while the last frames were read or queued: it was left for
            // this task to notice, and nobody will acknowledge the payload now. Parking it to wait for the
            // acknowledgement left it unsettled for good (the soak's `nearby send` hung after a receiver's cancel).
            if let event = state.payloads[id]?.peerEvent { return event == .payloadCanceled ? .canceled : .failure }
            if state.payloads[id]?.cancelRequested == true { return .canceled }
            guard state.awaitsAcks, let payload = state.payloads[id], !payload.acknowledged else { return .success }
            state.payloads[id]?.awaitingAck = (bytes, total)
            state.payloads[id]?.parkedReader = reader
            return nil
        }
        guard let outcome else { return true }
        finish(id, kind: kind, status: outcome, bytes: bytes, total: total)
        return false
    }

    private func finish(_ id: PayloadID, kind: PayloadKind, status: TransferStatus, bytes: Int64, total: Int64) {
        state.withLock { _ = $0.payloads.removeValue(forKey: id) }
        report(id, kind: kind, status: status, bytes: bytes, total: total)
    }

    private func report(_ id: PayloadID, kind: PayloadKind, status: TransferStatus, bytes: Int64, total: Int64) {
        let update = PayloadTransferUpdate(payloadID: id, kind: kind, status: status, bytesTransferred: bytes, totalBytes: total)
        let now = clock.now
        guard throttle.withLock({ $0.admit(update, now: now) }) else { return }
        onEvent(.transferUpdate(endpointID: peerEndpointID.withLock { $0 }, update: update, isOutgoing: true))
    }
}
