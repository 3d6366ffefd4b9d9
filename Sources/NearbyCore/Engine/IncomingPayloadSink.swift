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
    /// Sends a control frame the tracker asked for (waits when the writer's backlog is full).
    func sendControl(_ frame: ProtoOfflineFrame) async
    /// The peer canceled or failed a payload we send (`reason`: its `swift_nearby_reason`, if any).
    func peerControlledOutgoing(
        _ id: PayloadID, event: ProtoPayloadTransferFrame.ControlMessage.EventType, reason: String?)
    /// The peer broke the payload protocol: the session ends.
    func payloadViolation(_ error: NearbyError) async
    /// The read loop waits for the app to take a stream chunk (`true`), or goes on (`false`).
    func streamDelivery(started: Bool)
}

/// Receives an endpoint's incoming payloads: performs the ``IncomingPayloadTracker``'s actions, writes files
/// through the ``ReceivedFileStore``, hands stream chunks to the app, and reports ``EndpointEvent``s.
///
/// Owned by one session and used only on its actor (every call passes the session as the isolated host).
final class IncomingPayloadSink {
    private var tracker: IncomingPayloadTracker
    private let files: ReceivedFileStore
    private var streams: [PayloadID: AsyncThrowingChannel<[UInt8], any Error>] = [:]
    /// Thins out FILE progress to one update per 50 ms per payload (``TransferUpdateThrottle``).
    private var throttle = TransferUpdateThrottle()
    private let clock: NearbyClock
    private let onEvent: @Sendable (EndpointEvent) -> Void

    init(
        limits: ResourceLimits, receiveDirectory: URL, clock: NearbyClock = .continuous,
        onEvent: @escaping @Sendable (EndpointEvent) -> Void
    ) {
        tracker = IncomingPayloadTracker(limits: limits)
        files = ReceivedFileStore(directory: receiveDirectory, minimumFreeSpace: limits.minimumFreeDiskSpace)
        self.clock = clock
        self.onEvent = onEvent
    }

    /// Whether the payload is being received.
    func isReceiving(_ id: PayloadID) -> Bool { tracker.activePayloadIDs.contains(id) }

    /// A PAYLOAD_TRANSFER frame from the peer.
    func receive(_ frame: ProtoPayloadTransferFrame, host: isolated any IncomingPayloadHost) async {
        await perform(tracker.receive(frame), host: host)
    }

    /// Our app cancels a payload we receive (the peer is told).
    func cancel(_ id: PayloadID, host: isolated any IncomingPayloadHost) async {
        await perform(tracker.cancel(id), host: host)
    }

    /// The connection ended: partial files go (first, so nobody sees a failure while its partial file still
    /// exists), payloads under way fail, streams end with `error`.
    func failAll(endpointID: String, error: NearbyError?) {
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

    private func perform(_ actions: [IncomingPayloadTracker.Action], host: isolated any IncomingPayloadHost) async {
        let endpoint = host.peerEndpointID
        // A file that failed here (its folder or a write) already reported `failure`: the rest of this batch
        // (its chunk, its progress, its end) must not follow with more updates.
        var failedHere: Set<PayloadID> = []
        for action in actions where !host.isEnded {
            switch action {
            case .bytesReceived(let id, let bytes):
                onEvent(.bytesReceived(endpointID: endpoint, payloadID: id, bytes: bytes))
            case .fileStarted(let id, let fileName, let parentFolder, let total):
                do {
                    try files.begin(id, fileName: fileName, parentFolder: parentFolder, totalSize: total)
                    let name = ReceivedFileNames.displayName(fileName: fileName, parentFolder: parentFolder)
                    onEvent(.fileStarted(endpointID: endpoint, payloadID: id, name: name, totalBytes: total))
                } catch {
                    host.logger.error("cannot receive file", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                    failedHere.insert(id)
                    reportFailure(id, error, endpoint: endpoint)
                    await perform(tracker.failLocally(id, reason: error), host: host)
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
                    await perform(tracker.failLocally(id, reason: error), host: host)
                }
            case .fileFinished(let id, let total):
                guard !failedHere.contains(id) else { continue }
                finishFile(id, total: total, endpoint: endpoint, logger: host.logger)
            case .streamStarted(let id):
                // No buffer between the read loop and the app: each chunk is handed over when the app asks for
                // it, so an app that does not read holds the read loop, the socket fills and the sender waits.
                let stream = AsyncThrowingChannel<[UInt8], any Error>()
                streams[id] = stream
                onEvent(.streamReceived(endpointID: endpoint, payloadID: id, stream: IncomingByteStream(channel: stream)))
            case .streamChunk(let id, let data):
                guard let stream = streams[id] else { break }
                host.streamDelivery(started: true)
                await stream.send(Array(data))
                host.streamDelivery(started: false)
            case .streamFinished(let id):
                streams.removeValue(forKey: id)?.finish()
            case .update(let update):
                guard !failedHere.contains(update.payloadID) else { continue }
                report(update, endpoint: endpoint)
            case .discard(let id, let kind):
                if kind == .file { files.discard(id) }
                streams.removeValue(forKey: id)?.fail(NearbyError(.endpointIoError, "stream payload \(id) did not complete"))
            case .sendControl(let frame):
                await host.sendControl(frame)
            case .outgoingControl(let id, let event, let reason):
                host.peerControlledOutgoing(id, event: event, reason: reason)
            case .violation(let error):
                await host.payloadViolation(error)
            case .limitExceeded(let id, let error):
                host.logger.warning(
                    "incoming payload failed at a limit", metadata: ["payload_id": "\(id)", "error": "\(error)"])
                reportFailure(id, error, endpoint: endpoint)
            }
        }
    }

    private func finishFile(_ id: PayloadID, total: Int64, endpoint: String, logger: Logger) {
        do {
            let url = try files.finish(id, expectedSize: total)
            onEvent(.fileReceived(endpointID: endpoint, payloadID: id, url: url, name: url.lastPathComponent))
            report(
                PayloadTransferUpdate(payloadID: id, kind: .file, status: .success, bytesTransferred: total, totalBytes: total),
                endpoint: endpoint)
        } catch {
            logger.error("finishing a received file failed", metadata: ["payload_id": "\(id)", "error": "\(error)"])
            reportFailure(id, error, endpoint: endpoint)
            report(
                PayloadTransferUpdate(payloadID: id, kind: .file, status: .failure, bytesTransferred: total, totalBytes: total),
                endpoint: endpoint)
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
