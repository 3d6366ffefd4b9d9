import Foundation
import NearbyCore
import NearbySecurity
import NearbyWire

/// A peer that does the real handshake (connection request, UKEY2, acceptance) over a raw TCP socket and then sends
/// whatever encrypted frames a test builds, however hostile. It never reads after the handshake.
struct HostilePeer: Sendable {
    let client: RawTCPClient
    let secure: LockedValue<D2DSecureChannel>

    /// Connects to 127.0.0.1:`port` (an advertiser that accepts every connection) and completes the handshake.
    static func connect(port: Int, endpointID: String = "EV1L") async throws -> HostilePeer {
        let client = try await RawTCPClient.connect(port: port)
        do {
            let request = OfflineFrames.connectionRequest(.init(
                endpointID: endpointID, endpointInfo: Array("mallory".utf8), nonce: 4321, mediums: [.wifiLan]))
            try client.sendFrame(OfflineFrames.serialize(request))
            var ukey2 = Ukey2Client()
            try client.sendFrame(try ukey2.start())
            guard case .sendAndComplete(let finished, let result) = ukey2.receive(try await client.readFrame(timeout: 10)) else {
                throw IntegrationFailure("the advertiser's ServerInit does not satisfy an honest UKEY2 client")
            }
            try client.sendFrame(finished)
            try client.sendFrame(OfflineFrames.serialize(OfflineFrames.connectionResponse(accept: true)))
            // The advertiser's own (plaintext) response; keep-alives may come first.
            for _ in 0..<20 {
                let frame = try OfflineFrameParser.parse(try await client.readFrame(timeout: 10))
                if case .connectionResponse(let response) = frame {
                    guard response.response == .accept else { throw IntegrationFailure("the advertiser rejected us") }
                    return HostilePeer(client: client, secure: LockedValue(result.makeSecureChannel()))
                }
            }
            throw IntegrationFailure("no connection response from the advertiser")
        } catch {
            client.close()
            throw error
        }
    }

    /// Sends one frame, encrypted.
    func send(_ frame: ProtoOfflineFrame) throws {
        let sealed = try secure.withLock { try $0.encode(OfflineFrames.serialize(frame)) }
        try client.sendFrame(sealed)
    }

    /// Sends a whole FILE payload in one chunk plus the last (empty) chunk.
    func sendFile(id: Int64, name: String, folder: String?, contents: [UInt8]) throws {
        let header = OfflineFrames.payloadHeader(
            id: id, type: .file, totalSize: Int64(contents.count), fileName: name, parentFolder: folder)
        try send(OfflineFrames.payloadData(header: header, offset: 0, body: Data(contents), index: 0, isLast: false))
        try send(OfflineFrames.payloadData(
            header: header, offset: Int64(contents.count), body: nil, index: 1, isLast: true))
    }

    func close() { client.close() }
}
