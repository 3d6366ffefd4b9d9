import Foundation
import Logging
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire

/// A payload sender writing to one end of an in-memory pair, recording its outgoing transfer updates.
struct SenderHarness {
    let sender: OutgoingPayloadSender
    let writer: OutboundFrameWriter
    let writing: Task<(any Error)?, Never>
    let peer: InMemoryChannel
    let ours: InMemoryChannel
    let gate: SendGate
    let updates: LockedValue<[PayloadTransferUpdate]>

    init(chunkSize: Int = 1000) {
        let (ours, theirs) = InMemoryChannel.pair()
        self.ours = ours
        peer = theirs
        let writer = OutboundFrameWriter(channel: ours, secure: SecureContextBox())
        self.writer = writer
        writing = Task { await writer.run() }
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let (gate, updates) = (SendGate(), LockedValue<[PayloadTransferUpdate]>([]))
        self.gate = gate
        self.updates = updates
        sender = OutgoingPayloadSender(writer: writer, gate: gate, chunkSize: chunkSize, logger: logger) { event in
            if case .transferUpdate(_, let update, true) = event { updates.withLock { $0.append(update) } }
        }
    }

    /// The payload IDs that finished with success, in the order they finished.
    var succeeded: [PayloadID] { updates.withLock { $0.filter { $0.status == .success }.map(\.payloadID) } }

    func waitForSuccess(of id: PayloadID, _ what: String) async throws {
        _ = try await eventually(what) { succeeded.contains(id) ? true : nil }
    }

    func end() async {
        sender.stop()
        writer.finishAfterQueued()
        await ours.close()
        _ = await writing.value
    }
}
