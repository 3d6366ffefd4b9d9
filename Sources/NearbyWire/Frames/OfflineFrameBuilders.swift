import Foundation
import SwiftProtobuf

/// Typed builders for every `OfflineFrame` swift-nearby sends.
///
/// Every builder sets `version = V1` and the `V1Frame` type tag, and fills fields the way reference peers expect
/// them (for example: a connection request always carries its endpoint info in both `endpoint_name` and
/// `endpoint_info`, and its mediums explicitly).
package enum OfflineFrames {
    /// Everything a requester says about itself in its first frame.
    package struct ConnectionRequest: Sendable, Hashable {
        /// The requester's 4-character endpoint ID.
        package var endpointID: String
        /// The requester's endpoint info (≤ 131 bytes by convention), sent in fields 2 and 6.
        package var endpointInfo: [UInt8]
        /// A random tie-breaker for simultaneous connections.
        package var nonce: Int32
        /// The mediums the requester can upgrade to, in priority order. Always sent explicitly.
        package var mediums: [ProtoConnectionRequestFrame.Medium]
        /// The keep-alive interval the requester wants, in milliseconds; 0 leaves it out.
        package var keepAliveIntervalMillis: Int32
        /// The keep-alive timeout the requester wants, in milliseconds; 0 leaves it out.
        package var keepAliveTimeoutMillis: Int32
        /// Whether this device's Wi-Fi supports 5 GHz.
        package var supports5GHz: Bool

        /// Creates a request description.
        package init(
            endpointID: String, endpointInfo: [UInt8], nonce: Int32,
            mediums: [ProtoConnectionRequestFrame.Medium],
            keepAliveIntervalMillis: Int32 = 0, keepAliveTimeoutMillis: Int32 = 0, supports5GHz: Bool = false
        ) {
            self.endpointID = endpointID
            self.endpointInfo = endpointInfo
            self.nonce = nonce
            self.mediums = mediums
            self.keepAliveIntervalMillis = keepAliveIntervalMillis
            self.keepAliveTimeoutMillis = keepAliveTimeoutMillis
            self.supports5GHz = supports5GHz
        }
    }

    /// The legacy `status` integer peers expect in a rejecting response.
    package static let legacyRejectedStatus: Int32 = 9

    /// A `CONNECTION_REQUEST` frame.
    package static func connectionRequest(_ request: ConnectionRequest) -> ProtoOfflineFrame {
        var frame = ProtoConnectionRequestFrame()
        frame.endpointID = request.endpointID
        frame.endpointName = Data(request.endpointInfo)
        frame.endpointInfo = Data(request.endpointInfo)
        frame.nonce = request.nonce
        frame.mediums = request.mediums
        var metadata = ProtoMediumMetadata()
        metadata.supports5Ghz = request.supports5GHz
        metadata.apFrequency = -1
        frame.mediumMetadata = metadata
        if request.keepAliveIntervalMillis > 0 {
            frame.keepAliveIntervalMillis = request.keepAliveIntervalMillis
        }
        if request.keepAliveTimeoutMillis > 0 {
            frame.keepAliveTimeoutMillis = request.keepAliveTimeoutMillis
        }
        return wrap(.connectionRequest) { $0.connectionRequest = frame }
    }

    /// A `CONNECTION_RESPONSE` frame: accept or reject, with `safe_to_disconnect_version` 0 so peers stay out of
    /// the safe-disconnect, payload-ack and auto-resume protocols, and `os_info` when `osType` is given (Quick Share
    /// peers look at it).
    package static func connectionResponse(accept: Bool, osType: ProtoOsInfo.OsType? = nil) -> ProtoOfflineFrame {
        var frame = ProtoConnectionResponseFrame()
        if let osType {
            var info = ProtoOsInfo()
            info.type = osType
            frame.osInfo = info
        }
        frame.status = accept ? 0 : legacyRejectedStatus
        frame.response = accept ? .accept : .reject
        frame.multiplexSocketBitmask = 0
        frame.safeToDisconnectVersion = 0
        return wrap(.connectionResponse) { $0.connectionResponse = frame }
    }

    /// A `PAYLOAD_TRANSFER` DATA frame. A last chunk carries no body.
    package static func payloadData(
        header: ProtoPayloadTransferFrame.PayloadHeader, offset: Int64, body: Data?, index: Int32, isLast: Bool
    ) -> ProtoOfflineFrame {
        var chunk = ProtoPayloadTransferFrame.PayloadChunk()
        chunk.flags = isLast ? Int32(ProtoPayloadTransferFrame.PayloadChunk.Flags.lastChunk.rawValue) : 0
        chunk.offset = offset
        if let body { chunk.body = body }
        chunk.index = index
        var transfer = ProtoPayloadTransferFrame()
        transfer.packetType = .data
        transfer.payloadHeader = header
        transfer.payloadChunk = chunk
        return wrap(.payloadTransfer) { $0.payloadTransfer = transfer }
    }

    /// A `PAYLOAD_TRANSFER` CONTROL frame (cancel or error) for the payload described by `header`; `reason` goes
    /// in our own `swift_nearby_reason` field (other implementations skip it).
    package static func payloadControl(
        header: ProtoPayloadTransferFrame.PayloadHeader,
        event: ProtoPayloadTransferFrame.ControlMessage.EventType, offset: Int64, reason: String? = nil
    ) -> ProtoOfflineFrame {
        var control = ProtoPayloadTransferFrame.ControlMessage()
        control.event = event
        control.offset = offset
        if let reason { control.swiftNearbyReason = reason }
        var transfer = ProtoPayloadTransferFrame()
        transfer.packetType = .control
        transfer.payloadHeader = header
        transfer.controlMessage = control
        return wrap(.payloadTransfer) { $0.payloadTransfer = transfer }
    }

    /// A payload header.
    package static func payloadHeader(
        id: Int64, type: ProtoPayloadTransferFrame.PayloadHeader.PayloadType, totalSize: Int64,
        fileName: String? = nil, parentFolder: String? = nil, lastModifiedMillis: Int64? = nil
    ) -> ProtoPayloadTransferFrame.PayloadHeader {
        var header = ProtoPayloadTransferFrame.PayloadHeader()
        header.id = id
        header.type = type
        header.totalSize = totalSize
        if let fileName { header.fileName = fileName }
        if let parentFolder { header.parentFolder = parentFolder }
        if let lastModifiedMillis { header.lastModifiedTimestampMillis = lastModifiedMillis }
        return header
    }

    /// A `KEEP_ALIVE` frame or its acknowledgement.
    package static func keepAlive(ack: Bool, sequenceNumber: UInt32) -> ProtoOfflineFrame {
        var frame = ProtoKeepAliveFrame()
        frame.ack = ack
        frame.seqNum = sequenceNumber
        return wrap(.keepAlive) { $0.keepAlive = frame }
    }

    /// A `DISCONNECTION` frame outside the safe-to-disconnect protocol (both flags false).
    package static func disconnection() -> ProtoOfflineFrame {
        var frame = ProtoDisconnectionFrame()
        frame.requestSafeToDisconnect = false
        frame.ackSafeToDisconnect = false
        return wrap(.disconnection) { $0.disconnection = frame }
    }

    /// A bandwidth upgrade offer to move to Wi-Fi LAN at the given addresses (4 or 16 bytes each) and port: an
    /// `UPGRADE_PATH_AVAILABLE` carrying ``wifiLanUpgradePath(addresses:port:supportsDisablingEncryption:)``.
    package static func upgradePathAvailableWifiLan(
        addresses: [[UInt8]], port: Int32, supportsDisablingEncryption: Bool = false
    ) -> ProtoOfflineFrame {
        upgradePathAvailable(
            wifiLanUpgradePath(addresses: addresses, port: port, supportsDisablingEncryption: supportsDisablingEncryption))
    }

    /// The WIFI_LAN upgrade path at the given addresses (4 or 16 bytes each, IPv6 listed first) and port, with
    /// `supports_client_introduction_ack` set. The legacy `ip_address`/`wifi_port` fields are filled from the last
    /// IPv4 candidate, for old peers.
    package static func wifiLanUpgradePath(
        addresses: [[UInt8]], port: Int32, supportsDisablingEncryption: Bool = false
    ) -> ProtoBandwidthUpgradeNegotiationFrame.UpgradePathInfo {
        var socket = ProtoBandwidthUpgradeNegotiationFrame.UpgradePathInfo.WifiLanSocket()
        let ordered = addresses.filter { $0.count == 16 } + addresses.filter { $0.count == 4 }
        socket.addressCandidates = ordered.map { address in
            var candidate = ProtoServiceAddress()
            candidate.ipAddress = Data(address)
            candidate.port = port
            return candidate
        }
        if let ipv4 = ordered.last(where: { $0.count == 4 }) {
            socket.ipAddress = Data(ipv4)
            socket.wifiPort = port
        }
        var info = ProtoBandwidthUpgradeNegotiationFrame.UpgradePathInfo()
        info.medium = .wifiLan
        info.wifiLanSocket = socket
        info.supportsDisablingEncryption = supportsDisablingEncryption
        info.supportsClientIntroductionAck = true
        return info
    }

    /// A bandwidth upgrade offer for any path (`UPGRADE_PATH_AVAILABLE`).
    package static func upgradePathAvailable(
        _ info: ProtoBandwidthUpgradeNegotiationFrame.UpgradePathInfo
    ) -> ProtoOfflineFrame {
        bandwidthUpgrade(.upgradePathAvailable) { $0.upgradePathInfo = info }
    }

    /// The answer to an upgrade offer that cannot be taken: `UPGRADE_FAILURE` echoing the offered path.
    package static func upgradeFailure(
        _ info: ProtoBandwidthUpgradeNegotiationFrame.UpgradePathInfo
    ) -> ProtoOfflineFrame {
        bandwidthUpgrade(.upgradeFailure) { $0.upgradePathInfo = info }
    }

    /// The responder's first (plaintext) frame on the new socket of an upgrade.
    package static func clientIntroduction(
        endpointID: String, lastEndpointID: String? = nil, supportsDisablingEncryption: Bool = false
    ) -> ProtoOfflineFrame {
        var introduction = ProtoBandwidthUpgradeNegotiationFrame.ClientIntroduction()
        introduction.endpointID = endpointID
        if let lastEndpointID { introduction.lastEndpointID = lastEndpointID }
        introduction.supportsDisablingEncryption = supportsDisablingEncryption
        return bandwidthUpgrade(.clientIntroduction) { $0.clientIntroduction = introduction }
    }

    /// The initiator's (plaintext) acknowledgement of a client introduction.
    package static func clientIntroductionAck() -> ProtoOfflineFrame {
        bandwidthUpgrade(.clientIntroductionAck) {
            $0.clientIntroductionAck = ProtoBandwidthUpgradeNegotiationFrame.ClientIntroductionAck()
        }
    }

    /// Says that nothing more will be written to the prior channel.
    package static func lastWriteToPriorChannel() -> ProtoOfflineFrame {
        bandwidthUpgrade(.lastWriteToPriorChannel) { _ in }
    }

    /// Says the prior channel may be closed.
    package static func safeToClosePriorChannel() -> ProtoOfflineFrame {
        bandwidthUpgrade(.safeToClosePriorChannel) {
            $0.safeToClosePriorChannel = ProtoBandwidthUpgradeNegotiationFrame.SafeToClosePriorChannel()
        }
    }

    /// Serializes a frame for the wire.
    package static func serialize(_ frame: ProtoOfflineFrame) -> [UInt8] {
        // OfflineFrame has no required fields, so serialization cannot fail.
        do {
            return try frame.serializedBytes()
        } catch {
            preconditionFailure("OfflineFrame serialization failed: \(error)")
        }
    }

    static func bandwidthUpgrade(
        _ event: ProtoBandwidthUpgradeNegotiationFrame.EventType,
        _ fill: (inout ProtoBandwidthUpgradeNegotiationFrame) -> Void
    ) -> ProtoOfflineFrame {
        var negotiation = ProtoBandwidthUpgradeNegotiationFrame()
        negotiation.eventType = event
        fill(&negotiation)
        return wrap(.bandwidthUpgradeNegotiation) { $0.bandwidthUpgradeNegotiation = negotiation }
    }

    static func wrap(_ type: ProtoV1Frame.FrameType, _ fill: (inout ProtoV1Frame) -> Void) -> ProtoOfflineFrame {
        var v1 = ProtoV1Frame()
        v1.type = type
        fill(&v1)
        var frame = ProtoOfflineFrame()
        frame.version = .v1
        frame.v1 = v1
        return frame
    }
}
