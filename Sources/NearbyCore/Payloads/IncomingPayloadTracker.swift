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
/// either way the peer gets PAYLOAD_ERROR (saying why in `swift_nearby_reason`) and the endpoint stays up.
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
    }

    struct Entry: Sendable {
        var kind: PayloadKind
        var header: ProtoPayloadTransferFrame.PayloadHeader
        var received: Int64
        var bytes: [UInt8] = []
        var cancelRequested = false
    }

    private var entries: [PayloadID: Entry] = [:]
    private var finished: Set<PayloadID> = []
    private let limits: ResourceLimits
    /// FILE and STREAM bytes received on this connection so far.
    package private(set) var receivedBytes: Int64 = 0

    /// Creates an empty tracker enforcing `limits`.
    package init(limits: ResourceLimits = .init()) {
        self.limits = limits
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

    /// The most bytes of a peer's `swift_nearby_reason` that are kept.
    package static let maxReasonBytes = 512

    /// Writing a payload locally failed: tell the peer (with `reason`, when known), drop it, report the failure.
    package mutating func failLocally(_ id: PayloadID, reason: NearbyError? = nil) -> [Action] {
        guard let entry = entries.removeValue(forKey: id) else { return [] }
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
        }
        if isLast {
            entries[id] = nil
            finished.insert(id)
            if total >= 0 && entry.received != total {
                actions.append(.discard(id, entry.kind))
                actions.append(.update(update(id, entry, .failure)))
                return actions
            }
            switch entry.kind {
            case .bytes: actions.append(.bytesReceived(id, entry.bytes))
            case .file: actions.append(.fileFinished(id, totalSize: entry.received))
            case .stream: actions.append(.streamFinished(id))
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
        finished.insert(id)
        let status: TransferStatus = control.event == .payloadCanceled ? .canceled : .failure
        return [.discard(id, entry.kind), .update(update(id, entry, status))]
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
