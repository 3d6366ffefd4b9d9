import Foundation
import NearbyCore
import NearbySecurity
import NearbyWire

extension HostilePeer {
    /// Reads and decrypts the advertiser's frames until one satisfies `predicate` (keep-alives and others are
    /// skipped); bounded by `timeout` per frame.
    func receive(timeout: Double = 20, until predicate: (InboundFrame) -> Bool) async throws -> InboundFrame {
        for _ in 0..<10_000 {
            let sealed = try await client.readFrame(timeout: timeout)
            let plain = try secure.withLock { try $0.decode(sealed) }
            let frame = try OfflineFrameParser.parse(plain)
            if predicate(frame) { return frame }
        }
        throw IntegrationFailure("no matching frame in 10,000")
    }

    /// Opens a connection to 127.0.0.1:`port`, sends the CONNECTION_REQUEST and completes UKEY2, then says no more:
    /// never its CONNECTION_RESPONSE. The connection stays pending at the advertiser until it gives up (or evicts
    /// it). Returns the open socket.
    static func stallAfterHandshake(port: Int, endpointID: String) async throws -> RawTCPClient {
        let client = try await RawTCPClient.connect(port: port)
        do {
            let request = OfflineFrames.connectionRequest(.init(
                endpointID: endpointID, endpointInfo: Array("stranger".utf8), nonce: 99, mediums: [.wifiLan]))
            try client.sendFrame(OfflineFrames.serialize(request))
            var ukey2 = Ukey2Client()
            try client.sendFrame(try ukey2.start())
            guard case .sendAndComplete(let finished, _) = ukey2.receive(try await client.readFrame(timeout: 20)) else {
                throw IntegrationFailure("the advertiser's ServerInit does not satisfy an honest UKEY2 client")
            }
            try client.sendFrame(finished)
            return client
        } catch {
            client.close()
            throw error
        }
    }
}
