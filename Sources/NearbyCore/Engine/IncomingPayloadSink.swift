import AsyncAlgorithms
import Foundation
import Logging
import NearbyWire

/// What an ``IncomingPayloadSink`` needs from the session it works for; it runs on the session's actor.
protocol IncomingPayloadHost: Actor {
    /// Whether the session is over (later actions are skipped).
    var isEnded: Bool { get }
    /// The peer's endpoint ID for events ("" before it is known).
    var peerEndpointID: String { get }
    /// The session's logger.
    var logger: Logger { get }
    /// Queues a control frame the tracker asked for (the sink adds a ``FollowUp/writerRoom`` after it).
    func sendControl(_ frame: ProtoOfflineFrame)
    /// The peer canceled or failed a payload we send (`reason`: its `swift_nearby_reason`, if any).
    func peerControlledOutgoing(
        _ id: PayloadID, event: ProtoPayloadTransferFrame.ControlMessage.EventType, reason: String?)
    /// The peer broke the payload protocol: the session ends.
    func payloadViolation(_ error: NearbyError)
    /// The peer acknowledged a payload we sent (PAYLOAD_ACK).
    func peerAcknowledgedOutgoing(_ id: PayloadID)
}

/// Receives an endpoint's incoming payloads: performs the ``IncomingPayloadTracker``'s actions, writes files
/// through the ``ReceivedFileStore``, hands stream chunks to the app, and reports ``EndpointEvent``s.
///
/// Owned by one session and used only on its actor (every call passes the session as the isolated host). It never
/// suspends: handing a stream chunk to the app, the one thing that waits, is returned as a ``FollowUp`` for the
/// session to await once the frame's actions are done.
final class IncomingPayloadSink {
    private var tracker: IncomingPayloadTracker
    private let files: ReceivedFileStore
    private var streams: [PayloadID: AsyncThrowingChannel<[UInt8], any Error>] = [:]
    /// Thins out FILE progress to one update per 50 ms per payload (``TransferUpdateThrottle``).
    private var throttle = TransferUpdateThrottle()
    private let clock: NearbyClock
    /// The application's names for incoming files, if it names them (`EngineConfiguration.incomingFileNaming`).
    private let naming: IncomingFileNaming?
    private let onEvent: @Sendable (EndpointEvent) -> Void
    /// Auto-resume across a restart: partial files a dead process of ours kept for their senders.
    private let resumable: ResumableFiles?
    /// Auto-resume across a restart: the key of the tokens in the resume records written beside new files
    /// (``ResumableFiles``), when the sender resumes payloads.
    private var recordKey: [UInt8]?

    init(
        limits: ResourceLimits, receiveDirectory: URL, clock: NearbyClock = .continuous,
        bufferBudget: BufferedBytesBudget? = nil, resumable: ResumableFiles? = nil, naming: IncomingFileNaming? = nil,
        onEvent: @escaping @Sendable (EndpointEvent) -> Void
    ) {
        self.naming = naming
        tracker = IncomingPayloadTracker(limits: limits, budget: bufferBudget)
        files = ReceivedFileStore(directory: receiveDirectory, minimumFreeSpace: limits.minimumFreeDiskSpace)
        self.clock = clock
        self.resumable = resumable
        self.onEvent = onEvent
    }

    deinit {
        // The engine's budget outlives this connection: give back what its BYTES payloads still hold.
        tracker.releaseBuffers()
    }

    /// Auto-resume across a restart: from now on new files get a resume record with tokens under `key` (`nil`: no
    /// records; the sender does not resume).
    func keepResumeRecords(key: [UInt8]?) { recordKey = key }

    /// Whether the payload is being received.
    func isReceiving(_ id: PayloadID) -> Bool { tracker.activePayloadIDs.contains(id) }

    /// Auto-resume: where the peer goes on with a payload it was sending us (``IncomingPayloadTracker/resumePoint(for:)``).
    /// A payload this connection never saw may be one a dead process of ours was receiving: when `token` opens its
    /// kept partial file, the file is taken over and the payload goes on from the file's size.
    func resumePoint(
        for id: PayloadID, token: [UInt8]?, host: isolated any IncomingPayloadHost
    ) -> (outcome: ProtoAutoResumeFrame.ResumeOutcome, offset: Int64, index: Int32) {
        if tracker.isUnknown(id), let token, let resumable, let kept = resumable.claim(id, token: token) {
            let record = kept.record
            do {
                let size = try files.adopt(
                    id, folder: kept.folder, temporaryName: kept.temporaryName,
                    fileName: ReceivedFileNames.sanitizeFileName(record.fileName), totalSize: record.totalSize)
                ResumableFiles.remove(beside: kept.temporaryName, folder: kept.folder, in: files.directory)
                if let location = files.temporaryLocation(id) {
                    ResumableFiles.write(record, beside: location.name, folder: location.folder, in: files.directory)
                }
                tracker.restoreFile(
                    id, fileName: record.fileName, parentFolder: kept.folder.joined(separator: "/"),
                    totalSize: record.totalSize, received: size)
                host.logger.info("resuming a file a previous process received in part", metadata: [
                    "payload_id": "\(id)", "offset": "\(size)"])
                let name = ReceivedFileNames.displayName(fileName: record.fileName, parentFolder: kept.folder.joined(separator: "/"))
                onEvent(.fileStarted(endpointID: host.peerEndpointID, payloadID: id, name: name, totalBytes: record.totalSize))
                return (.resumeFromOffset, size, 0)
            } catch {
                host.logger.error("cannot take over a kept partial file", metadata: ["payload_id": "\(id)", "error": "\(error)"])
            }
        }
        return tracker.resumePoint(for: id)
    }

    /// Sets which kinds of payload the peer gets a PAYLOAD_ACK for (``LinkTerms/acknowledges(_:)``).
    func acknowledge(_ kinds: Set<PayloadKind>) { tracker.acknowledgedKinds = kinds }

    /// A PAYLOAD_TRANSFER frame from the peer.
    func receive(
        _ frame: ProtoPayloadTransferFrame, host: isolated any IncomingPayloadHost, into followUps: inout [FollowUp]
    ) {
        perform(tracker.receive(frame), host: host, into: &followUps)
    }

    /// Our app cancels a payload we receive (the peer is told).
    func cancel(_ id: PayloadID, host: isolated any IncomingPayloadHost, into followUps: inout [FollowUp]) {
        perform(tracker.cancel(id), host: host, into: &followUps)
    }

    /// The connection ended: partial files go (first, so nobody sees a failure while its partial file still
    /// exists), payloads under way fail, streams end with `error`.
    func failAll(endpointID: String, error: NearbyError?) {
        for id in tracker.activePayloadIDs { removeRecord(id) }
        files.discardAll()
        for action in tracker.failAll() {
            if case .update(let update) = action {
                report(update, endpoint: endpointID)
            }
        }
        for stream in streams.values {
            stream.fail(error ?? NearbyError(.endpointIoError, "the connection closed"))
        }
        streams.removeAll()
    }

    private func perform(
        _ actions: [IncomingPayloadTracker.Action], host: isolated any IncomingPayloadHost,
        into followUps: inout [FollowUp]
    ) {
        let endpoint = host.peerEndpointID
        // A file that failed here (its folder or a write) already reported `failure`: the rest of this batch
        // (its chunk, its progress, its end) must not follow with more updates.
        var failedHere: Set<PayloadID> = []
        for action in actions where !host.isEnded {
            switch action {
            case .bytesReceived(let id, let bytes):
                onEvent(.bytesReceived(endpointID: endpoint, payloadID: id, bytes: bytes))
            case .fileStarted(let id, var fileName, var parentFolder, let total):
                do {
                    if let naming {
                        guard let named = naming(endpoint, id, fileName, parentFolder) else {
                            throw NearbyError(.invalidArgument, "the application refused file payload \(id)")
                        }
                        (fileName, parentFolder) = named
                    }
                    try files.begin(id, fileName: fileName, parentFolder: parentFolder, totalSize: total)
                    if let recordKey, let location = files.temporaryLocation(id) {
                        let record = ResumeRecord(
                            payloadID: id, senderEndpointID: endpoint, fileName: fileName, folder: location.folder,
                            totalSize: total, token: Hex.encode(ResumableFiles.token(key: recordKey, payloadID: id)))
                        ResumableFiles.write(record, beside: location.name, folder: location.folder, in: files.directory)
                    }
                    let name = ReceivedFileNames.displayName(fileName: fileName, parentFolder: parentFolder)
                    onEvent(.fileStarted(endpointID: endpoint, payloadID: id, name: name, totalBytes: total))
                } catch {
                    host.logger.error("cannot receive file", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                    failedHere.insert(id)
                    let failure = (error as? NearbyError) ?? NearbyError(.endpointIoError, "cannot receive file", cause: error)
                    reportFailure(id, failure, endpoint: endpoint)
                    perform(tracker.failLocally(id, reason: failure), host: host, into: &followUps)
                }
            case .fileChunk(let id, let data):
                guard !failedHere.contains(id) else { continue }
                do {
                    try files.write(id, data)
                } catch {
                    host.logger.error(
                        "writing a received file failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                    failedHere.insert(id)
                    reportFailure(id, error, endpoint: endpoint)
                    perform(tracker.failLocally(id, reason: error), host: host, into: &followUps)
                }
            case .fileFinished(let id, let total):
                guard !failedHere.contains(id) else { continue }
                removeRecord(id)
                if finishFile(id, total: total, endpoint: endpoint, logger: host.logger) {
                    if tracker.acknowledgedKinds.contains(.file) {
                        // Only once the file is in place under its final name.
                        host.sendControl(OfflineFrames.payloadAck(id: id))
                        followUps.append(.writerRoom)
                    }
                } else {
                    tracker.notCompleted(id)
                }
            case .streamStarted(let id):
                // No buffer between the read loop and the app: each chunk is handed over when the app asks for
                // it, so an app that does not read holds the read loop, the socket fills and the sender waits.
                let stream = AsyncThrowingChannel<[UInt8], any Error>()
                streams[id] = stream
                onEvent(.streamReceived(endpointID: endpoint, payloadID: id, stream: IncomingByteStream(channel: stream)))
            case .streamChunk(let id, let data):
                guard let stream = streams[id] else { break }
                followUps.append(.stream(.chunk(stream, Array(data))))
            case .streamFinished(let id):
                // After the chunks before it, which are handed over later.
                if let stream = streams.removeValue(forKey: id) { followUps.append(.stream(.finish(stream))) }
            case .update(let update):
                guard !failedHere.contains(update.payloadID) else { continue }
                report(update, endpoint: endpoint)
            case .discard(let id, let kind):
                if kind == .file {
                    removeRecord(id)
                    files.discard(id)
                }
                streams.removeValue(forKey: id)?.fail(NearbyError(.endpointIoError, "stream payload \(id) did not complete"))
            case .sendControl(let frame):
                host.sendControl(frame)
                followUps.append(.writerRoom)
            case .outgoingControl(let id, let event, let reason):
                host.peerControlledOutgoing(id, event: event, reason: reason)
            case .outgoingAcknowledged(let id):
                host.peerAcknowledgedOutgoing(id)
            case .violation(let error):
                host.payloadViolation(error)
            case .limitExceeded(let id, let error):
                host.logger.warning(
                    "incoming payload failed at a limit", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                reportFailure(id, error, endpoint: endpoint)
            }
        }
    }

    /// Deletes the resume record of payload `id`'s temporary file, if it has one.
    private func removeRecord(_ id: PayloadID) {
        guard let location = files.temporaryLocation(id) else { return }
        ResumableFiles.remove(beside: location.name, folder: location.folder, in: files.directory)
    }

    /// Moves a complete file into place and reports it; `false` when that failed (reported as a failure).
    private func finishFile(_ id: PayloadID, total: Int64, endpoint: String, logger: Logger) -> Bool {
        do {
            let url = try files.finish(id, expectedSize: total)
            onEvent(.fileReceived(endpointID: endpoint, payloadID: id, url: url, name: url.lastPathComponent))
            report(
                PayloadTransferUpdate(payloadID: id, kind: .file, status: .success, bytesTransferred: total, totalBytes: total),
                endpoint: endpoint)
            return true
        } catch {
            logger.error("finishing a received file failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
            reportFailure(id, error, endpoint: endpoint)
            report(
                PayloadTransferUpdate(payloadID: id, kind: .file, status: .failure, bytesTransferred: total, totalBytes: total),
                endpoint: endpoint)
            return false
        }
    }

    /// Says why an incoming payload is about to fail (before its `failure` update).
    private func reportFailure(_ id: PayloadID, _ error: NearbyError, endpoint: String) {
        onEvent(.payloadFailed(endpointID: endpoint, payloadID: id, reason: error, isOutgoing: false))
    }

    /// Reports an incoming payload's update unless the throttle holds it back (FILE progress within 50 ms of the
    /// last one delivered).
    private func report(_ update: PayloadTransferUpdate, endpoint: String) {
        guard throttle.admit(update, now: clock.now) else { return }
        onEvent(.transferUpdate(endpointID: endpoint, update: update, isOutgoing: false))
    }
}
