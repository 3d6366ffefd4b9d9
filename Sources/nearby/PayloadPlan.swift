import Foundation
import NearbyConnections
import NearbyCore

/// The BYTES and FILE payloads of `--bytes` and `--file`, digested once, and how to send them to one peer: in
/// order, each awaited, with a `payload_sent` line (carrying the peer's `endpoint_id`) when it completes. Several
/// peers are served by running ``send(to:manager:session:output:)`` once per peer, concurrently.
struct PayloadPlan: Sendable {
    struct Item: Sendable {
        enum Content: Sendable {
            case bytes(Data)
            case file(URL)
        }

        var content: Content
        var size: Int64
        var sha256: String

        var type: String {
            if case .bytes = content { return "bytes" }
            return "file"
        }
    }

    let items: [Item]

    var isEmpty: Bool { items.isEmpty }

    /// Digests the payloads (files are read once here, not once per peer).
    init(bytes: [String], files: [String]) throws {
        var items: [Item] = bytes.map { text in
            let data = Data(text.utf8)
            return Item(content: .bytes(data), size: Int64(data.count), sha256: Digests.sha256(data))
        }
        for path in files {
            let url = URL(fileURLWithPath: path)
            let (digest, size) = try Digests.sha256(fileAt: url)
            items.append(Item(content: .file(url), size: size, sha256: digest))
        }
        self.items = items
    }

    /// Sends every payload to `peer`, one after another, each awaited.
    /// - Throws: `CLIFailure` when a payload cannot be started or does not end in success.
    func send(to peer: String, manager: ConnectionManager, session: PeerSession, output: EventOutput) async throws {
        for item in items {
            let id = PayloadID.unique()
            await session.registerOutgoing(id, type: item.type, size: item.size, sha256: item.sha256)
            do {
                switch item.content {
                case .bytes(let data):
                    try await manager.send(data, to: peer, id: id)
                case .file(let url):
                    try await manager.sendResource(at: url, withName: url.lastPathComponent, to: peer, id: id)
                }
            } catch let error as NearbyError {
                throw CLIFailure("cannot send to \(peer): \(error.message)")
            }
            let result = await session.waitForOutgoing(id)
            guard result == .success else { throw CLIFailure("sending payload \(id) to \(peer) ended with \(result)") }
            output.event(
                "payload_sent",
                PayloadSentEvent(payloadID: id, type: item.type, size: item.size, sha256: item.sha256, endpointID: peer),
                human: "sent \(item.type) payload \(id) to \(peer) (\(EventOutput.size(item.size)), sha256 \(item.sha256))")
        }
    }
}
