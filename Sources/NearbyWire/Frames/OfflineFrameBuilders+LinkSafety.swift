import Foundation

/// Builders for the frames of safe-to-disconnect, payload acknowledgements, auto-reconnect and auto-resume
/// (docs/LINK-SAFETY.md).
extension OfflineFrames {
    /// The `safe_to_disconnect_version` swift-nearby announces to every peer: 1, safe-to-disconnect. Higher
    /// features are only used with a peer that announces them (payload acks from 6) or that proves it runs
    /// swift-nearby (`PeerExtension` in NearbySecurity).
    package static let announcedSafeToDisconnectVersion: Int32 = 1

    /// The version from which a peer acknowledges FILE and STREAM payloads with PAYLOAD_ACK.
    package static let payloadAckVersion: Int32 = 6

    /// A `CONNECTION_RESPONSE` frame with the given `safe_to_disconnect_version` and, when not empty,
    /// `handshake_data` (swift-nearby's extension announcement; Google's implementation never reads the field), and
    /// `os_info` when `osType` is given.
    package static func connectionResponse(
        accept: Bool, safeToDisconnectVersion: Int32, handshakeData: [UInt8] = [], osType: ProtoOsInfo.OsType? = nil
    ) -> ProtoOfflineFrame {
        var frame = connectionResponse(accept: accept, osType: osType)
        frame.v1.connectionResponse.safeToDisconnectVersion = safeToDisconnectVersion
        if !handshakeData.isEmpty { frame.v1.connectionResponse.handshakeData = Data(handshakeData) }
        return frame
    }

    /// A `DISCONNECTION` frame of the safe-to-disconnect protocol: `{request: true, ack: false}` asks the peer to
    /// confirm it read everything before it; `{request: true, ack: true}` is that confirmation.
    package static func disconnection(requestSafeToDisconnect: Bool, ackSafeToDisconnect: Bool) -> ProtoOfflineFrame {
        var frame = ProtoDisconnectionFrame()
        frame.requestSafeToDisconnect = requestSafeToDisconnect
        frame.ackSafeToDisconnect = ackSafeToDisconnect
        return wrap(.disconnection) { $0.disconnection = frame }
    }

    /// A `PAYLOAD_TRANSFER` `PAYLOAD_ACK`: the receiver has the whole payload `id` (header with `total_size` −1,
    /// as Google's receiver sends it).
    package static func payloadAck(id: Int64) -> ProtoOfflineFrame {
        var header = ProtoPayloadTransferFrame.PayloadHeader()
        header.id = id
        header.totalSize = -1
        var transfer = ProtoPayloadTransferFrame()
        transfer.packetType = .payloadAck
        transfer.payloadHeader = header
        return wrap(.payloadTransfer) { $0.payloadTransfer = transfer }
    }

    /// An `AUTO_RECONNECT` frame: the reconnecting side's introduction on a new channel (plaintext), the other
    /// side's ack (plaintext), or, after the new channel's UKEY2, either side's encrypted session proof.
    package static func autoReconnect(
        _ event: ProtoAutoReconnectFrame.EventType, endpointID: String, lastEndpointID: String? = nil,
        sessionProof: [UInt8]? = nil
    ) -> ProtoOfflineFrame {
        var frame = ProtoAutoReconnectFrame()
        frame.eventType = event
        frame.endpointID = endpointID
        if let lastEndpointID { frame.lastEndpointID = lastEndpointID }
        if let sessionProof { frame.sessionProof = Data(sessionProof) }
        return wrap(.autoReconnect) { $0.autoReconnect = frame }
    }

    /// An `AUTO_RESUME` frame: the sender's START for a payload it was sending when the channel broke, or the
    /// receiver's ACK saying where to go on (`next_payload_chunk_index`, and the byte offset in swift-nearby's
    /// extension field) or that it has the payload already or cannot continue it.
    package static func autoResume(
        _ event: ProtoAutoResumeFrame.EventType, payloadID: Int64, nextChunkIndex: Int32 = 0, nextOffset: Int64 = 0,
        outcome: ProtoAutoResumeFrame.ResumeOutcome = .resumeFromOffset, resumeToken: [UInt8]? = nil
    ) -> ProtoOfflineFrame {
        var frame = ProtoAutoResumeFrame()
        frame.eventType = event
        frame.pendingPayloadID = payloadID
        frame.nextPayloadChunkIndex = nextChunkIndex
        frame.version = 1
        if let resumeToken { frame.resumeToken = Data(resumeToken) }
        if event == .payloadResumeTransferAck {
            frame.nextPayloadOffset = nextOffset
            frame.resumeOutcome = outcome
        }
        return wrap(.autoResume) { $0.autoResume = frame }
    }
}
