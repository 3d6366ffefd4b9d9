import Foundation
import NearbyWire

/// The receiving half of the payload protocol for one endpoint, as a value type that returns actions.
///
/// Chunks must arrive in order: each DATA chunk's offset equals the bytes received so far, and never runs past the
/// announced total. A payload starts with a chunk at offset 0 and ends with a LAST_CHUNK at the final offset;
/// a file whose last chunk comes early is a failure, never a success. A payload ID of 0 is answered with
/// PAYLOAD_ERROR. Anything else impossible (unknown IDs mid-payload, offsets out of order) is a protocol violation
/// that drops the endpoint. The caller performs the file and stream I/O the actions name.
///
/// Limits (from ``ResourceLimits``): a BYTES payload must announce 0…``PayloadLimits/maxBytesPayloadSize`` bytes
/// (−1 or more is a violation) and never buffers more than it announced; at most
/// ``ResourceLimits/maxConcurrentIncomingPayloads`` payloads may be open at once (one more is a violation). FILE and
/// STREAM payloads, of known size or not (−1), share ``ResourceLimits/maxReceivedBytesPerConnection``: a payload
/// whose announced size does not fit in what is left fails at its header, and one whose bytes cross it fails there;
/// either way the peer gets PAYLOAD_ERROR (saying why in `swift_nearby_reason`) and the endpoint stays up. BYTES payloads reserve their announced size
/// against ``ResourceLimits/maxBufferedBytesPerEndpoint`` and the engine's shared ``BufferedBytesBudget``
/// (``ResourceLimits/maxBufferedBytes``) from their first chunk until they end; one that does not fit fails the same
/// way, before anything of it is buffered.
package struct IncomingPayloadTracker: Sendable {
    /// Something the I/O layer must do.
    package enum Action: Sendable {
        /// A complete BYTES payload.
        case bytesReceived(PayloadID, [UInt8])
        /// A FILE payload begins: create its temporary file.
        case fileStarted(PayloadID, fileName: String, parentFolder: String, totalSize: Int64)
        /// Append to the payload's file (offsets are always the current end).
        case fileChunk(PayloadID, Data)
        /// The file is complete with `totalSize` bytes: check its size and move it into place.
        case fileFinished(PayloadID, totalSize: Int64)
        /// A STREAM payload begins.
        case streamStarted(PayloadID)
        /// Bytes of a stream.
        case streamChunk(PayloadID, Data)
        /// The stream ended normally.
        case streamFinished(PayloadID)
        /// Report progress (in progress, success, failure or canceled).
        case update(PayloadTransferUpdate)
        /// Drop any partial data of this payload (file or stream) after a failure or cancellation.
        case discard(PayloadID, PayloadKind)
        /// Send this control frame to the peer.
        case sendControl(ProtoOfflineFrame)
        /// A CONTROL frame about a payload we are sending; `reason` is the peer's `swift_nearby_reason` (cut to
        /// ``maxReasonBytes``), if it gave one.
        case outgoingControl(PayloadID, ProtoPayloadTransferFrame.ControlMessage.EventType, reason: String?)
        /// The peer broke the payload protocol: drop the endpoint.
        case violation(NearbyError)
        /// A payload crossed a ``ResourceLimits`` bound and was failed (the peer is told by a ``sendControl(_:)``
        /// before it); for the log.
        case limitExceeded(PayloadID, NearbyError)
        /// The peer has a payload we sent (its PAYLOAD_ACK).
        case outgoingAcknowledged(PayloadID)
    }

    struct Entry: Sendable {
        var kind: PayloadKind
        var header: ProtoPayloadTransferFrame.PayloadHeader
        var received: Int64
        var bytes: [UInt8] = []
        var cancelRequested = false
        /// Bytes reserved for a BYTES payload's buffer.
        var reserved: Int64 = 0
        /// The index of the next DATA chunk (one more than the last chunk with a body).
        var nextIndex: Int32 = 0
    }

    private var entries: [PayloadID: Entry] = [:]
    private var finished: Set<PayloadID> = []
    /// Payloads received whole (a subset of `finished`, which also holds failed and canceled ones).
    private var completed: Set<PayloadID> = []
    /// The kinds of payload the peer gets a PAYLOAD_ACK for once we have them whole (``LinkTerms``); FILE
    /// payloads are acknowledged by the caller once the file is in place.
    package var acknowledgedKinds: Set<PayloadKind> = []
    private let limits: ResourceLimits
    /// FILE and STREAM bytes received on this connection so far.
    package private(set) var receivedBytes: Int64 = 0
    /// Bytes reserved by the open BYTES payloads of this connection.
    package private(set) var bufferedBytes: Int64 = 0
    private let budget: BufferedBytesBudget?

    /// Creates an empty tracker enforcing `limits`, reserving BYTES buffers in `budget` (shared by an engine's
    /// endpoints) too when there is one.
    package init(limits: ResourceLimits = .init(), budget: BufferedBytesBudget? = nil) {
        self.limits = limits
        self.budget = budget
    }

    /// Gives back every reservation (the connection is gone); idempotent.
    package mutating func releaseBuffers() {
        budget?.release(bufferedBytes)
        bufferedBytes = 0
        for id in entries.keys { entries[id]?.reserved = 0 }
    }

    private mutating func release(_ entry: Entry) {
        guard entry.reserved > 0 else { return }
        bufferedBytes -= entry.reserved
        budget?.release(entry.reserved)
    }

    /// IDs of payloads still arriving.
    package var activePayloadIDs: [PayloadID] { Array(entries.keys) }

    /// Handles one validated PAYLOAD_TRANSFER frame.
    package mutating func receive(_ frame: ProtoPayloadTransferFrame) -> [Action] {
        let header = frame.payloadHeader
        let id = header.id
        switch frame.packetType {
        case .data:
            return receiveData(frame, id: id)
        case .control:
            return receiveControl(frame.controlMessage, id: id)
        case .payloadAck:
            return [.outgoingAcknowledged(id)]
        default:
            return []
        }
    }

    /// Our side cancels an incoming payload: reported now, the peer is told with its next chunk.
    package mutating func cancel(_ id: PayloadID) -> [Action] {
        guard var entry = entries[id], !entry.cancelRequested else { return [] }
        entry.cancelRequested = true
        entries[id] = entry
        return []
    }

    /// Auto-resume: where the peer goes on with payload `id`, which it was sending us when the channel broke. A
    /// FILE or STREAM under way goes on at the next chunk; a BYTES payload under way starts again (its partial
    /// bytes are dropped); one we never saw starts from the beginning; one we have whole, or failed, is settled.
    package mutating func resumePoint(for id: PayloadID) -> (
        outcome: ProtoAutoResumeFrame.ResumeOutcome, offset: Int64, index: Int32
    ) {
        if var entry = entries[id] {
            guard entry.kind != .bytes else {
                entry.received = 0
                entry.bytes = []
                entry.nextIndex = 0
                entries[id] = entry
                return (.resumeFromOffset, 0, 0)
            }
            return (.resumeFromOffset, entry.received, entry.nextIndex)
        }
        if completed.contains(id) { return (.alreadyReceived, 0, 0) }
        if finished.contains(id) { return (.notResumable, 0, 0) }
        return (.resumeFromOffset, 0, 0)
    }

    /// Whether the tracker never saw payload `id` on this connection.
    package func isUnknown(_ id: PayloadID) -> Bool { entries[id] == nil && !finished.contains(id) }

    /// Auto-resume after a restart of this process: payload `id`, a FILE of which `received` bytes are in a kept
    /// partial file, goes on from there.
    package mutating func restoreFile(
        _ id: PayloadID, fileName: String, parentFolder: String, totalSize: Int64, received: Int64
    ) {
        let header = OfflineFrames.payloadHeader(
            id: id, type: .file, totalSize: totalSize, fileName: fileName, parentFolder: parentFolder)
        entries[id] = Entry(kind: .file, header: header, received: received)
        receivedBytes += received
    }

    /// A file we had whole could not be put in place: it does not count as received.
    package mutating func notCompleted(_ id: PayloadID) {
        completed.remove(id)
    }

    /// The most bytes of a peer's `swift_nearby_reason` that are kept.
    package static let maxReasonBytes = 512

    /// Writing a payload locally failed: tell the peer (with `reason`, when known), drop it, report the failure.
    package mutating func failLocally(_ id: PayloadID, reason: NearbyError? = nil) -> [Action] {
        guard let entry = entries.removeValue(forKey: id) else { return [] }
        release(entry)
        finished.insert(id)
        return [
            .sendControl(OfflineFrames.payloadControl(
                header: entry.header, event: .payloadError, offset: entry.received, reason: reason?.message)),
            .discard(id, entry.kind), .update(update(id, entry, .failure)),
        ]
    }

    /// The endpoint is gone: every payload still arriving failed.
    package mutating func failAll() -> [Action] {
        var actions: [Action] = []
        for (id, entry) in entries {
            actions.append(.discard(id, entry.kind))
            actions.append(.update(update(id, entry, .failure)))
        }
        releaseBuffers()
        entries.removeAll()
        return actions
    }

    private mutating func receiveData(_ frame: ProtoPayloadTransferFrame, id: PayloadID) -> [Action] {
        let header = frame.payloadHeader
        let chunk = frame.payloadChunk
        let isLast = chunk.flags & 1 != 0
        if id == 0 {
            return chunk.offset == 0
                ? [.sendControl(OfflineFrames.payloadControl(header: header, event: .payloadError, offset: 0))] : []
        }
        if finished.contains(id) {
            return []  // late chunks of a payload already cancelled or failed here
        }
        guard var entry = entries[id] else {
            return start(frame, id: id)
        }
        if entry.cancelRequested {
            entries[id] = nil
            release(entry)
            finished.insert(id)
            return [
                .sendControl(OfflineFrames.payloadControl(header: entry.header, event: .payloadCanceled, offset: entry.received)),
                .discard(id, entry.kind), .update(update(id, entry, .canceled)),
            ]
        }
        guard chunk.offset == entry.received else {
            return [.violation(NearbyError(
                .invalidFrame, "payload \(id): chunk at offset \(chunk.offset), expected \(entry.received)"))]
        }
        return append(chunk, isLast: isLast, id: id, entry: &entry)
    }

    private mutating func start(_ frame: ProtoPayloadTransferFrame, id: PayloadID) -> [Action] {
        let header = frame.payloadHeader
        guard frame.payloadChunk.offset == 0 else {
            return [.violation(NearbyError(.invalidFrame, "payload \(id) starts at offset \(frame.payloadChunk.offset)"))]
        }
        guard let kind = PayloadKind(header.type) else {
            return [.violation(NearbyError(.invalidFrame, "payload \(id) has unknown type \(header.type)"))]
        }
        guard entries.count < limits.maxConcurrentIncomingPayloads else {
            return [.violation(NearbyError(
                .invalidFrame, "more than \(limits.maxConcurrentIncomingPayloads) incoming payloads at once"))]
        }
        if kind == .bytes && !(0...Int64(PayloadLimits.maxBytesPayloadSize)).contains(header.totalSize) {
            return [.violation(NearbyError(
                .invalidFrame,
                "bytes payload \(id) announces \(header.totalSize) bytes (must be 0...\(PayloadLimits.maxBytesPayloadSize))"))]
        }
        if kind != .bytes && header.totalSize < -1 {
            return [.violation(NearbyError(.invalidFrame, "\(kind) payload \(id) has a bad size \(header.totalSize)"))]
        }
        var entry = Entry(kind: kind, header: header, received: 0)
        if kind == .bytes, let refusal = reserveBuffer(for: &entry, id: id) {
            finished.insert(id)
            return [
                .sendControl(OfflineFrames.payloadControl(header: header, event: .payloadError, offset: 0)),
                .update(update(id, entry, .failure)), .limitExceeded(id, refusal),
            ]
        }
        if kind != .bytes && header.totalSize > remainingBudget {
            finished.insert(id)
            let error = NearbyError(
                .endpointIoError,
                "\(kind) payload \(id) of \(header.totalSize) bytes exceeds the \(remainingBudget) bytes left of "
                    + "the \(limits.maxReceivedBytesPerConnection)-byte budget of this connection")
            return [
                .limitExceeded(id, error),
                .sendControl(OfflineFrames.payloadControl(
                    header: header, event: .payloadError, offset: 0, reason: error.message)),
                .update(update(id, entry, .failure)),
            ]
        }
        var actions: [Action] = []
        switch kind {
        case .file:
            actions.append(.fileStarted(id, fileName: header.fileName, parentFolder: header.parentFolder, totalSize: header.totalSize))
        case .stream:
            actions.append(.streamStarted(id))
        case .bytes:
            break
        }
        actions += append(frame.payloadChunk, isLast: frame.payloadChunk.flags & 1 != 0, id: id, entry: &entry)
        return actions
    }

    private mutating func append(
        _ chunk: ProtoPayloadTransferFrame.PayloadChunk, isLast: Bool, id: PayloadID, entry: inout Entry
    ) -> [Action] {
        var actions: [Action] = []
        let body = chunk.body
        let total = entry.header.totalSize
        if !body.isEmpty {
            let newReceived = entry.received + Int64(body.count)
            if total >= 0 && newReceived > total {
                return [.violation(NearbyError(.invalidFrame, "payload \(id) runs past its total size \(total)"))]
            }
            if entry.kind != .bytes {
                if receivedBytes + Int64(body.count) > limits.maxReceivedBytesPerConnection {
                    entries[id] = entry
                    let error = NearbyError(
                        .endpointIoError,
                        "\(entry.kind) payload \(id) crosses the \(limits.maxReceivedBytesPerConnection)-byte budget of this connection")
                    return actions + [.limitExceeded(id, error)] + failLocally(id, reason: error)
                }
                receivedBytes += Int64(body.count)
            }
            switch entry.kind {
            case .bytes:
                entry.bytes.append(contentsOf: body)
            case .file:
                actions.append(.fileChunk(id, body))
            case .stream:
                actions.append(.streamChunk(id, body))
            }
            entry.received = newReceived
            entry.nextIndex = chunk.index &+ 1
        }
        if isLast {
            entries[id] = nil
            release(entry)
            finished.insert(id)
            if total >= 0 && entry.received != total {
                actions.append(.discard(id, entry.kind))
                actions.append(.update(update(id, entry, .failure)))
                return actions
            }
            completed.insert(id)
            switch entry.kind {
            case .bytes: actions.append(.bytesReceived(id, entry.bytes))
            case .file: actions.append(.fileFinished(id, totalSize: entry.received))
            case .stream: actions.append(.streamFinished(id))
            }
            if entry.kind != .file, acknowledgedKinds.contains(entry.kind) {
                actions.append(.sendControl(OfflineFrames.payloadAck(id: id)))
            }
            if entry.kind != .file {
                // A file's success is reported by the caller once it is in place.
                actions.append(.update(update(id, entry, .success)))
            }
            return actions
        }
        entries[id] = entry
        actions.append(.update(update(id, entry, .inProgress)))
        return actions
    }

    private mutating func receiveControl(
        _ control: ProtoPayloadTransferFrame.ControlMessage, id: PayloadID
    ) -> [Action] {
        guard let entry = entries[id] else {
            let reason = control.hasSwiftNearbyReason
                ? ReceivedFileNames.truncate(control.swiftNearbyReason, toUTF8Bytes: Self.maxReasonBytes) : nil
            return finished.contains(id) ? [] : [.outgoingControl(id, control.event, reason: reason)]
        }
        entries[id] = nil
        release(entry)
        finished.insert(id)
        let status: TransferStatus = control.event == .payloadCanceled ? .canceled : .failure
        return [.discard(id, entry.kind), .update(update(id, entry, status))]
    }

    /// Reserves the announced size of a BYTES payload for this endpoint and in the engine's budget; the error when
    /// it does not fit (nothing is then reserved).
    private mutating func reserveBuffer(for entry: inout Entry, id: PayloadID) -> NearbyError? {
        let size = entry.header.totalSize
        if bufferedBytes + size > limits.maxBufferedBytesPerEndpoint {
            return NearbyError(
                .limitExceeded,
                "bytes payload \(id) of \(size) bytes does not fit: \(bufferedBytes) bytes are buffered for this "
                    + "endpoint, the limit is \(limits.maxBufferedBytesPerEndpoint)")
        }
        if let budget, !budget.reserve(size) {
            return NearbyError(
                .limitExceeded,
                "bytes payload \(id) of \(size) bytes does not fit: \(budget.reservedBytes) bytes are buffered for all "
                    + "endpoints, the limit is \(budget.limit)")
        }
        bufferedBytes += size
        entry.reserved = size
        return nil
    }

    /// What is left of the per-connection budget, less what open payloads of known size still announced.
    private var remainingBudget: Int64 {
        let promised = entries.values.reduce(Int64(0)) { sum, entry in
            entry.kind == .bytes || entry.header.totalSize < 0 ? sum : sum + (entry.header.totalSize - entry.received)
        }
        return limits.maxReceivedBytesPerConnection - receivedBytes - promised
    }

    private func update(_ id: PayloadID, _ entry: Entry, _ status: TransferStatus) -> PayloadTransferUpdate {
        PayloadTransferUpdate(
            payloadID: id, kind: entry.kind, status: status, bytesTransferred: entry.received,
            totalBytes: entry.header.totalSize)
    }
}
