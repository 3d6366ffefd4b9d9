import Foundation
import SwiftProtobuf

/// A received `OfflineFrame` that parsed and passed every receive rule, by type.
///
/// Produced by ``OfflineFrameParser/parse(_:policy:)``. Frame types the engine does not act on are kept as
/// ``other(_:_:)`` so callers can log and ignore them instead of dropping the endpoint.
package enum InboundFrame: Sendable {
    /// The requester's first (plaintext) frame on a new socket.
    case connectionRequest(ProtoConnectionRequestFrame)
    /// One side's accept or reject decision.
    case connectionResponse(ProtoConnectionResponseFrame)
    /// A payload data chunk, control message or acknowledgement.
    case payloadTransfer(ProtoPayloadTransferFrame)
    /// A bandwidth upgrade step.
    case bandwidthUpgradeNegotiation(ProtoBandwidthUpgradeNegotiationFrame)
    /// A keep-alive or its acknowledgement.
    case keepAlive(ProtoKeepAliveFrame)
    /// The peer is leaving.
    case disconnection(ProtoDisconnectionFrame)
    /// A recognised frame type that swift-nearby does not act on (auth, auto-resume, …).
    case other(ProtoV1Frame.FrameType, ProtoV1Frame)

    /// The frame's type tag.
    package var frameType: ProtoV1Frame.FrameType {
        switch self {
        case .connectionRequest: .connectionRequest
        case .connectionResponse: .connectionResponse
        case .payloadTransfer: .payloadTransfer
        case .bandwidthUpgradeNegotiation: .bandwidthUpgradeNegotiation
        case .keepAlive: .keepAlive
        case .disconnection: .disconnection
        case .other(let type, _): type
        }
    }
}

/// Parses and validates received `OfflineFrame` bytes.
package enum OfflineFrameParser {
    /// Parses `bytes` as an `OfflineFrame`, requires version V1 with a known frame type and its sub-message, and
    /// applies the receive rules of ``OfflineFrameValidator``.
    ///
    /// - Throws: ``NearbyError/Code-swift.struct/malformedMessage`` when the bytes are not an `OfflineFrame`;
    ///   ``NearbyError/Code-swift.struct/invalidFrame`` when a rule is broken.
    package static func parse(_ bytes: some Collection<UInt8>, policy: OfflineFrameValidator.Policy = .init())
        throws(NearbyError) -> InboundFrame
    {
        let frame: ProtoOfflineFrame
        do {
            // The decrypted message arrives as `Data` (a slice of the plaintext); parse it where it lies.
            if let data = bytes as? Data {
                frame = try ProtoOfflineFrame(serializedBytes: data)
            } else {
                frame = try ProtoOfflineFrame(serializedBytes: Array(bytes))
            }
        } catch {
            throw NearbyError(.malformedMessage, "bytes are not an OfflineFrame", cause: error)
        }
        return try classify(frame, policy: policy)
    }

    /// Classifies and validates an already-decoded frame.
    package static func classify(_ frame: ProtoOfflineFrame, policy: OfflineFrameValidator.Policy = .init())
        throws(NearbyError) -> InboundFrame
    {
        guard frame.hasVersion, frame.version == .v1, frame.hasV1 else {
            throw NearbyError(.invalidFrame, "OfflineFrame is not version V1")
        }
        let v1 = frame.v1
        guard v1.hasType, v1.type != .unknownFrameType else {
            throw NearbyError(.invalidFrame, "V1Frame has no known frame type")
        }
        switch v1.type {
        case .connectionRequest:
            guard v1.hasConnectionRequest else { throw missing("connection_request") }
            try OfflineFrameValidator.validate(v1.connectionRequest)
            return .connectionRequest(v1.connectionRequest)
        case .connectionResponse:
            guard v1.hasConnectionResponse else { throw missing("connection_response") }
            return .connectionResponse(v1.connectionResponse)
        case .payloadTransfer:
            guard v1.hasPayloadTransfer else { throw missing("payload_transfer") }
            try OfflineFrameValidator.validate(v1.payloadTransfer)
            return .payloadTransfer(v1.payloadTransfer)
        case .bandwidthUpgradeNegotiation:
            guard v1.hasBandwidthUpgradeNegotiation else { throw missing("bandwidth_upgrade_negotiation") }
            try OfflineFrameValidator.validate(v1.bandwidthUpgradeNegotiation, policy: policy)
            return .bandwidthUpgradeNegotiation(v1.bandwidthUpgradeNegotiation)
        case .keepAlive:
            return .keepAlive(v1.hasKeepAlive ? v1.keepAlive : ProtoKeepAliveFrame())
        case .disconnection:
            return .disconnection(v1.hasDisconnection ? v1.disconnection : ProtoDisconnectionFrame())
        default:
            return .other(v1.type, v1)
        }
    }

    private static func missing(_ field: String) -> NearbyError {
        NearbyError(.invalidFrame, "V1Frame is missing its \(field) sub-message")
    }
}
