import NearbySecurity
import NearbyWire

/// The handshake that binds a new channel to a connection whose channel broke (auto-reconnect between two
/// swift-nearby peers; docs/LINK-SAFETY.md):
///
/// 1. The side that connected originally (the client) opens a channel and sends, in plaintext,
///    `AUTO_RECONNECT{CLIENT_INTRODUCTION, endpoint_id: its own ID, last_endpoint_id: the ID it knows the peer by}`.
/// 2. The other side (the server) finds the endpoint by that ID and answers `AUTO_RECONNECT{CLIENT_INTRODUCTION_ACK}`.
/// 3. A fresh UKEY2 runs on the channel (client and server as in a new connection).
/// 4. The client sends, encrypted with the new keys, `AUTO_RECONNECT{CLIENT_INTRODUCTION, session_proof}`; the
///    server checks the proof, then answers with its own `AUTO_RECONNECT{CLIENT_INTRODUCTION_ACK, session_proof}`,
///    which the client checks. A proof is HMAC-SHA256 under a key only the two ends of the old connection hold
///    (`PeerExtension.reconnectKey`) over the sender's role and the new handshake's authentication string, so it
///    is valid for this channel only: a stranger who knows the endpoint ID fails at step 4 and the endpoint is
///    not touched.
///
/// Every step reads within one deadline for the whole handshake; a failure throws and the caller closes the channel.
enum ReconnectHandshake {
    /// Runs the client's side on `channel`; returns the new channel's encryption context (its counters past the
    /// proofs).
    static func client(
        on channel: any EndpointChannel, endpointID: String, peerEndpointID: String, key: [UInt8],
        within timeout: Duration, clock: NearbyClock
    ) async throws -> D2DSecureChannel {
        try await channel.closing(after: timeout, clock: clock) {
            try await channel.writeFrame(OfflineFrames.serialize(OfflineFrames.autoReconnect(
                .clientIntroduction, endpointID: endpointID, lastEndpointID: peerEndpointID)))
            guard let first = try await channel.readFrame() else {
                // The peer took the channel and closed it at our introduction: it holds no such endpoint (a
                // restarted process).
                throw Refused()
            }
            let ack = try reconnectFrame(first)
            guard ack.eventType == .clientIntroductionAck else {
                throw NearbyError(.invalidFrame, "expected AUTO_RECONNECT CLIENT_INTRODUCTION_ACK, got \(ack.eventType)")
            }
            var client = Ukey2Client()
            try await channel.writeFrame(try client.start())
            let result: Ukey2HandshakeResult
            switch client.receive(try await read(channel)) {
            case .sendAndComplete(let finished, let completed):
                try await channel.writeFrame(finished)
                result = completed
            case .fail(let alert, let error):
                if let alert { try? await channel.writeFrame(alert) }
                throw error
            case .send, .complete:
                throw NearbyError(.handshakeFailed, "unexpected UKEY2 step in a reconnect")
            }
            var context = result.makeSecureChannel()
            let proof = PeerExtension.reconnectProof(key: key, role: .client, newAuthString: result.authString)
            try await channel.writeFrame(try context.encode(OfflineFrames.serialize(OfflineFrames.autoReconnect(
                .clientIntroduction, endpointID: endpointID, sessionProof: proof))))
            let answer = try reconnectFrame(try context.decode(try await read(channel)))
            guard answer.eventType == .clientIntroductionAck,
                PeerExtension.verifyReconnectProof(
                    Array(answer.sessionProof), key: key, peerRole: .server, newAuthString: result.authString)
            else {
                throw NearbyError(.authenticationFailed, "the peer's reconnect proof does not match the connection")
            }
            return context
        }
    }

    /// Runs the server's side on `channel`, whose introduction (step 1) was read already; returns the new
    /// channel's encryption context.
    static func server(
        on channel: any EndpointChannel, endpointID: String, key: [UInt8], within timeout: Duration,
        clock: NearbyClock
    ) async throws -> D2DSecureChannel {
        try await channel.closing(after: timeout, clock: clock) {
            try await channel.writeFrame(OfflineFrames.serialize(OfflineFrames.autoReconnect(
                .clientIntroductionAck, endpointID: endpointID)))
            var server = Ukey2Server()
            guard case .send(let serverInit) = server.receive(try await read(channel)) else {
                throw NearbyError(.handshakeFailed, "bad UKEY2 ClientInit in a reconnect")
            }
            try await channel.writeFrame(serverInit)
            let result: Ukey2HandshakeResult
            switch server.receive(try await read(channel)) {
            case .complete(let completed), .sendAndComplete(_, let completed):
                result = completed
            case .fail(let alert, let error):
                if let alert { try? await channel.writeFrame(alert) }
                throw error
            case .send:
                throw NearbyError(.handshakeFailed, "unexpected UKEY2 step in a reconnect")
            }
            var context = result.makeSecureChannel()
            let claim = try reconnectFrame(try context.decode(try await read(channel)))
            guard claim.eventType == .clientIntroduction,
                PeerExtension.verifyReconnectProof(
                    Array(claim.sessionProof), key: key, peerRole: .client, newAuthString: result.authString)
            else {
                throw NearbyError(.authenticationFailed, "the reconnect proof does not match the connection")
            }
            let proof = PeerExtension.reconnectProof(key: key, role: .server, newAuthString: result.authString)
            try await channel.writeFrame(try context.encode(OfflineFrames.serialize(OfflineFrames.autoReconnect(
                .clientIntroductionAck, endpointID: endpointID, sessionProof: proof))))
            return context
        }
    }

    /// The peer closed the channel at our introduction: it has no endpoint to reconnect (its process restarted).
    struct Refused: Error {}

    /// The AUTO_RECONNECT frame in `body`.
    static func reconnectFrame(_ body: [UInt8]) throws -> ProtoAutoReconnectFrame {
        guard case .other(.autoReconnect, let v1) = try OfflineFrameParser.parse(body), v1.hasAutoReconnect else {
            throw NearbyError(.invalidFrame, "expected an AUTO_RECONNECT frame")
        }
        return v1.autoReconnect
    }

    private static func read(_ channel: any EndpointChannel) async throws -> [UInt8] {
        guard let body = try await channel.readFrame() else {
            throw NearbyError(.endpointIoError, "the channel closed during the reconnect handshake")
        }
        return body
    }
}
