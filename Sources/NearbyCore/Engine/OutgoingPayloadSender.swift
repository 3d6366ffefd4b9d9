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
        var laneTails: [PayloadKind: Task<Void, Never>] = [:]
        var stopped = false
    }

    private enum Check {
        case proceed
        case stop(TransferStatus, notifyPeer: ProtoPayloadTransferFrame.ControlMessage.EventType?)
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
        state.withLock { state in
            state.payloads[id] = OutgoingPayloadState(kind: source.kind)
            // Only BYTES wait for the payload before them (their order is their delivery order).
            let previous = source.kind == .bytes ? state.laneTails[source.kind] : nil
            let slots = source.kind == .bytes ? nil : self.slots
            let task = Task { [reader] in
                var reader = reader
                await previous?.value
                await slots?.acquire()
                await self.transmit(id: id, reader: &reader)
                slots?.release()
                reader.close()
            }
            if source.kind == .bytes { state.laneTails[source.kind] = task }
        }
    }

    /// Asks the payload's sender to stop; `false` if we are not sending it.
    package func cancel(_ id: PayloadID) -> Bool {
        state.withLock { state in
            guard state.payloads[id] != nil else { return false }
            state.payloads[id]?.cancelRequested = true
            return true
        }
    }

    /// Whether payload `id` is being sent (and has not ended).
    func isSending(_ id: PayloadID) -> Bool {
        state.withLock { $0.payloads[id] != nil }
    }

    /// The peer canceled or failed a payload we send.
    func peerControl(_ id: PayloadID, event: ProtoPayloadTransferFrame.ControlMessage.EventType) {
        state.withLock { $0.payloads[id]?.peerEvent = event }
    }

    /// The connection ended: every payload under way fails at its next chunk.
    package func stop() {
        state.withLock { $0.stopped = true }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func transmit(id: PayloadID, reader: inout PayloadChunkReader) async {
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
        var check = self.check(id)
        while true {
            switch check {
            case .proceed:
                break
            case .stop(let status, let notifyPeer):
                if let notifyPeer {
                    await enqueue(OfflineFrames.payloadControl(header: header, event: notifyPeer, offset: offset))
                }
                finish(id, kind: kind, status: status, bytes: offset, total: totalSize)
                return
            }
            let chunk: Data?
            reader.chunkSize = chunkSize.withLock { $0 }
            do {
                chunk = try await reader.next()
            } catch {
                logger.error("reading an outgoing payload failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                await enqueue(OfflineFrames.payloadControl(header: header, event: .payloadError, offset: offset))
                finish(id, kind: kind, status: .failure, bytes: offset, total: totalSize)
                return
            }
            guard let chunk else {
                if totalSize >= 0 && offset != totalSize {
                    await enqueue(OfflineFrames.payloadControl(header: header, event: .payloadError, offset: offset))
                    finish(id, kind: kind, status: .failure, bytes: offset, total: totalSize)
                    return
                }
                await enqueue(OfflineFrames.payloadData(header: header, offset: offset, body: nil, index: index, isLast: true))
                finish(id, kind: kind, status: isStopped ? .failure : .success, bytes: offset, total: totalSize)
                return
            }
            let frame = OfflineFrames.payloadData(header: header, offset: offset, body: chunk, index: index, isLast: false)
            offset += Int64(chunk.count)
            index += 1
            await enqueue(frame)
            report(id, kind: kind, status: .inProgress, bytes: offset, total: totalSize)
            check = self.check(id)
        }
    }

    private func check(_ id: PayloadID) -> Check {
        state.withLock { state in
            guard let payload = state.payloads[id], !state.stopped else { return .stop(.failure, notifyPeer: nil) }
            if payload.cancelRequested { return .stop(.canceled, notifyPeer: .payloadCanceled) }
            if let event = payload.peerEvent {
                return .stop(event == .payloadCanceled ? .canceled : .failure, notifyPeer: nil)
            }
            return .proceed
        }
    }

    /// Queues a frame once the gate is open; returns when the writer took it. Dropped once stopped.
    private func enqueue(_ frame: ProtoOfflineFrame) async {
        await gate.wait()
        guard !isStopped else { return }
        await writer.enqueue(writer.item(frame))
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
