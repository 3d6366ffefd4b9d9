import Foundation

/// The receive rules a Nearby Connections peer applies to frames before acting on them.
///
/// Each `validate` throws ``NearbyError/Code-swift.struct/invalidFrame`` naming the broken rule. The rules follow
/// the reference implementation's validator: connection requests need an endpoint ID and name; payload transfers
/// need a header, a sane total size, legal file names and in-range offsets; bandwidth upgrade offers need usable
/// credentials for their medium.
package enum OfflineFrameValidator {
    /// Choices that differ between production and test setups.
    package struct Policy: Sendable, Hashable {
        /// Accept loopback and link-local addresses in a Wi-Fi LAN upgrade path. Peers reject them; tests that run
        /// on loopback only need them.
        package var allowsLoopbackUpgradeAddresses: Bool

        /// Creates a policy; the default is the strict one peers use.
        package init(allowsLoopbackUpgradeAddresses: Bool = false) {
            self.allowsLoopbackUpgradeAddresses = allowsLoopbackUpgradeAddresses
        }
    }

    /// Characters a received file name must not contain (besides NUL).
    package static let illegalFileNameFragments = [":", "/", "\\"]
    /// Fragments a received parent folder must not contain (besides NUL).
    package static let illegalParentFolderFragments = [":", ".."]

    /// Requires a non-empty `endpoint_id` and `endpoint_name`.
    package static func validate(_ request: ProtoConnectionRequestFrame) throws(NearbyError) {
        guard !request.endpointID.isEmpty else { throw invalid("connection request has no endpoint_id") }
        guard !request.endpointName.isEmpty else { throw invalid("connection request has no endpoint_name") }
    }

    /// Applies the payload transfer rules.
    package static func validate(_ frame: ProtoPayloadTransferFrame) throws(NearbyError) {
        guard frame.hasPayloadHeader else { throw invalid("payload transfer has no payload_header") }
        let header = frame.payloadHeader
        if frame.packetType == .payloadAck {
            return
        }
        guard header.hasTotalSize, header.totalSize >= 0 || header.totalSize == -1 else {
            throw invalid("payload header has a missing or negative total_size")
        }
        if header.hasType, header.type == .file {
            if header.hasFileName, containsIllegal(header.fileName, illegalFileNameFragments) {
                throw invalid("file name contains NUL, ':', '/' or '\\'")
            }
            if header.hasParentFolder, containsIllegal(header.parentFolder, illegalParentFolderFragments) {
                throw invalid("parent folder contains NUL, ':' or '..'")
            }
        }
        guard frame.hasPacketType else { throw invalid("payload transfer has no packet_type") }
        let totalSize = header.totalSize
        switch frame.packetType {
        case .data:
            guard frame.hasPayloadChunk else { throw invalid("DATA packet has no payload_chunk") }
            let chunk = frame.payloadChunk
            guard chunk.hasFlags else { throw invalid("payload chunk has no flags") }
            let isLast = chunk.flags & Int32(ProtoPayloadTransferFrame.PayloadChunk.Flags.lastChunk.rawValue) != 0
            guard chunk.hasBody || isLast else { throw invalid("payload chunk has no body and is not the last") }
            guard chunk.hasOffset, chunk.offset >= 0 else { throw invalid("payload chunk offset missing or < 0") }
            guard totalSize == -1 || chunk.offset <= totalSize else {
                throw invalid("payload chunk offset \(chunk.offset) is beyond total_size \(totalSize)")
            }
        case .control:
            guard frame.hasControlMessage else { throw invalid("CONTROL packet has no control_message") }
            let control = frame.controlMessage
            guard control.hasOffset, control.offset >= 0 else { throw invalid("control offset missing or < 0") }
            guard totalSize == -1 || control.offset <= totalSize else {
                throw invalid("control offset \(control.offset) is beyond total_size \(totalSize)")
            }
        default:
            break
        }
    }

    /// Applies the bandwidth upgrade rules: offers need credentials valid for their medium, introductions an
    /// endpoint ID.
    package static func validate(_ frame: ProtoBandwidthUpgradeNegotiationFrame, policy: Policy = .init())
        throws(NearbyError)
    {
        guard frame.hasEventType else { throw invalid("bandwidth upgrade frame has no event_type") }
        switch frame.eventType {
        case .upgradePathAvailable:
            guard frame.hasUpgradePathInfo else { throw invalid("upgrade offer has no upgrade_path_info") }
            try validateUpgradePath(frame.upgradePathInfo, policy: policy)
        case .clientIntroduction:
            guard frame.hasClientIntroduction, frame.clientIntroduction.hasEndpointID else {
                throw invalid("client introduction has no endpoint_id")
            }
        default:
            break
        }
    }

    static func validateUpgradePath(
        _ info: ProtoBandwidthUpgradeNegotiationFrame.UpgradePathInfo, policy: Policy
    ) throws(NearbyError) {
        guard info.hasMedium else { throw invalid("upgrade path has no medium") }
        switch info.medium {
        case .wifiLan:
            guard info.hasWifiLanSocket else { throw invalid("Wi-Fi LAN upgrade path has no socket") }
            let socket = info.wifiLanSocket
            guard (socket.hasIpAddress && socket.wifiPort > 0) || !socket.addressCandidates.isEmpty else {
                throw invalid("Wi-Fi LAN upgrade path has no address")
            }
            guard socket.addressCandidates.count <= UpgradeAddressRules.maxCandidates else {
                throw invalid(
                    "Wi-Fi LAN upgrade path offers \(socket.addressCandidates.count) addresses, more than \(UpgradeAddressRules.maxCandidates)")
            }
            if socket.hasIpAddress {
                try validateLanAddress(Array(socket.ipAddress), policy: policy)
            }
            for candidate in socket.addressCandidates {
                try validateLanAddress(Array(candidate.ipAddress), policy: policy)
            }
        case .wifiHotspot:
            guard info.hasWifiHotspotCredentials else { throw invalid("hotspot upgrade path has no credentials") }
            let credentials = info.wifiHotspotCredentials
            guard credentials.hasSsid else { throw invalid("hotspot credentials have no SSID") }
            guard credentials.hasPassword, (8...64).contains(credentials.password.utf8.count) else {
                throw invalid("hotspot password must be 8 to 64 bytes")
            }
            let hasGateway = credentials.hasGateway && !credentials.gateway.isEmpty
            guard hasGateway || !credentials.addressCandidates.isEmpty else {
                throw invalid("hotspot credentials have neither gateway nor address candidates")
            }
            if hasGateway {
                guard isDottedIPv4(credentials.gateway) else { throw invalid("hotspot gateway is not IPv4") }
                guard credentials.hasPort, (1...65535).contains(credentials.port) else {
                    throw invalid("hotspot port out of range")
                }
            }
            for candidate in credentials.addressCandidates where ![4, 16].contains(candidate.ipAddress.count) {
                throw invalid("hotspot address candidate is not 4 or 16 bytes")
            }
        case .wifiAware:
            guard info.hasWifiAwareCredentials, info.wifiAwareCredentials.hasServiceID,
                info.wifiAwareCredentials.hasServiceInfo
            else { throw invalid("Wi-Fi Aware upgrade path lacks service_id or service_info") }
        case .wifiDirect:
            guard info.hasWifiDirectCredentials else { throw invalid("Wi-Fi Direct upgrade path has no credentials") }
            try validateWifiDirect(info.wifiDirectCredentials)
        case .bluetooth:
            guard info.hasBluetoothCredentials, info.bluetoothCredentials.hasServiceName,
                info.bluetoothCredentials.hasMacAddress
            else { throw invalid("Bluetooth upgrade path lacks service_name or mac_address") }
        case .webRtc:
            guard info.hasWebRtcCredentials, info.webRtcCredentials.hasPeerID else {
                throw invalid("WebRTC upgrade path has no peer_id")
            }
        default:
            break
        }
    }

    static func validateWifiDirect(
        _ credentials: ProtoBandwidthUpgradeNegotiationFrame.UpgradePathInfo.WifiDirectCredentials
    ) throws(NearbyError) {
        guard credentials.hasFrequency, credentials.frequency >= -1 else {
            throw invalid("Wi-Fi Direct frequency missing or below -1")
        }
        let ssid = credentials.ssid
        let ssidValid = credentials.hasSsid && ssid.utf8.count <= 32 && isWifiDirectSsid(ssid)
        let passwordValid = credentials.hasPassword && (8...64).contains(credentials.password.utf8.count)
        let deviceNameValid = credentials.hasDeviceName && credentials.deviceName.utf8.count < 32
        let pinValid = credentials.hasPin && (0...16).contains(credentials.pin.utf8.count)
        guard (ssidValid && passwordValid) || (deviceNameValid && pinValid) else {
            throw invalid("Wi-Fi Direct credentials need a DIRECT-xx SSID and password, or a device name and PIN")
        }
    }

    static func validateLanAddress(_ address: [UInt8], policy: Policy) throws(NearbyError) {
        guard let refusal = UpgradeAddressRules.refusal(address) else { return }
        if refusal.isLoopbackOrLinkLocal && policy.allowsLoopbackUpgradeAddresses { return }
        if refusal == .malformed {
            throw invalid("Wi-Fi LAN address is \(address.count) bytes, not 4 or 16")
        }
        throw invalid("Wi-Fi LAN upgrade address is \(refusal)")
    }

    /// Whether peers refuse this address (4 or 16 bytes) in a Wi-Fi LAN upgrade path: anything but a unicast
    /// address of another host (see ``UpgradeAddressRules``).
    package static func isRefusedUpgradeAddress(_ address: [UInt8]) -> Bool {
        UpgradeAddressRules.refusal(address) != nil
    }

    static func isDottedIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        return parts.allSatisfy { part in
            (1...3).contains(part.count) && part.allSatisfy(\.isASCIIDigit) && Int(part)! <= 255
        }
    }

    static func isWifiDirectSsid(_ ssid: String) -> Bool {
        let bytes = Array(ssid.utf8)
        guard bytes.count >= 9, bytes.starts(with: Array("DIRECT-".utf8)) else { return false }
        return bytes[7...8].allSatisfy { $0 < 0x80 && Character(UnicodeScalar($0)).isASCIIAlphanumeric }
    }

    static func containsIllegal(_ text: String, _ fragments: [String]) -> Bool {
        if text.isEmpty { return false }
        let bytes = Array(text.utf8)
        if bytes.contains(0) { return true }
        // Byte-wise, not per Character: "/\u{301}" is one Character that is not "/", but the file system sees "/".
        return fragments.contains { fragment in
            let needle = Array(fragment.utf8)
            guard needle.count <= bytes.count else { return false }
            return (0...(bytes.count - needle.count)).contains { bytes[$0..<($0 + needle.count)].elementsEqual(needle) }
        }
    }

    static func invalid(_ message: String) -> NearbyError {
        NearbyError(.invalidFrame, message)
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
    var isASCIIAlphanumeric: Bool { isASCII && (isLetter || isNumber) }
}
