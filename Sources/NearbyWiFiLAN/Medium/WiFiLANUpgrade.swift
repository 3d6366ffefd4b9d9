#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import NIOCore
import NIOPosix
import NearbyCore
import NearbyWire

/// The listener of one bandwidth upgrade to Wi-Fi LAN: a TCP listener on a port the system chose, offered at
/// every usable address of this host.
package final class WiFiLANUpgradeListener: UpgradeListener {
    /// Always `MediumKind.wifiLAN`.
    package var medium: MediumKind { .wifiLAN }
    /// A WIFI_LAN path with the addresses (IPv6 first, then IPv4) and the listener's port.
    package let pathInfo: UpgradePathInfo
    /// The addresses offered, as 4- or 16-byte values.
    package let addresses: [[UInt8]]
    private let listener: TCPListener

    init(listener: TCPListener, addresses: [[UInt8]]) {
        self.listener = listener
        self.addresses = addresses
        pathInfo = OfflineFrames.wifiLanUpgradePath(addresses: addresses, port: Int32(listener.port))
    }

    /// Stops listening; an accepted channel stays open.
    package func stop() async {
        await listener.stop()
    }
}

extension WiFiLANMedium {
    /// Wi-Fi LAN is the target of bandwidth upgrades.
    package var supportsUpgradeListening: Bool { true }

    /// Listens for the new channel of a bandwidth upgrade on `listenHost`, port chosen by the system, and offers
    /// every address of this host that a peer on the LAN can use: IPv4 ones when listening on `0.0.0.0`, plus
    /// global IPv6 ones when listening on `::`, or `listenHost` itself when it is one address. Loopback and
    /// link-local addresses are never offered (peers refuse them).
    ///
    /// - Throws: `NearbyError` `.mediumUnavailable` when this host has no such address (no LAN), or
    ///   `.endpointIoError` when the port cannot be listened on.
    package func startUpgradeListener(
        onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any UpgradeListener {
        let addresses: [[UInt8]]
        if let bound = IPAddressText.parse(listenHost), !bound.allSatisfy({ $0 == 0 }) {
            addresses = OfflineFrameValidator.isRefusedUpgradeAddress(bound) ? [] : [bound]
        } else {
            addresses = try Self.upgradeAddresses(includeIPv6: listenHost.contains(":"))
        }
        guard !addresses.isEmpty else {
            throw NearbyError(.mediumUnavailable, "no LAN address to offer for a bandwidth upgrade (only loopback or link-local)")
        }
        let listener = try await TCPListener.bind(host: listenHost, port: 0, medium: .wifiLAN, logger: logger) {
            onIncoming($0)
        }
        return WiFiLANUpgradeListener(listener: listener, addresses: addresses)
    }

    /// Connects to the first address of a WIFI_LAN upgrade path that accepts: the address candidates in the order
    /// given, then the legacy `ip_address`/`wifi_port`.
    ///
    /// A path the peer should not have offered is refused before any connect attempt: one with more than
    /// `UpgradeAddressRules.maxCandidates` candidates, or with any address that
    /// `UpgradeAddressRules.refusal(_:)` refuses (unspecified, loopback, link-local, multicast,
    /// broadcast, in any IPv4-mapped or -compatible form).
    ///
    /// - Throws: `NearbyError` `.invalidArgument` for a path that is not WIFI_LAN or has no address;
    ///   `.invalidFrame` for a refused path; `.endpointIoError` naming every failed attempt.
    package func connectForUpgrade(to path: UpgradePathInfo) async throws -> any EndpointChannel {
        guard path.medium == .wifiLan, path.hasWifiLanSocket else {
            throw NearbyError(.invalidArgument, "not a Wi-Fi LAN upgrade path")
        }
        try Self.refuseUnsafeAddresses(path.wifiLanSocket)
        let targets = Self.upgradeTargets(path.wifiLanSocket)
        guard !targets.isEmpty else { throw NearbyError(.invalidArgument, "the Wi-Fi LAN upgrade path has no address") }
        var failures: [String] = []
        for (host, port) in targets {
            do {
                return try await TCPConnector.connect(hosts: [host], port: port, medium: .wifiLAN, logger: logger)
            } catch let error as NearbyError {
                failures.append(error.message)
            }
        }
        throw NearbyError(.endpointIoError, "no upgrade address accepted: \(failures.joined(separator: "; "))")
    }

    /// Throws `.invalidFrame` when the path offers too many candidates or any address that is not another host's
    /// unicast address.
    static func refuseUnsafeAddresses(_ socket: UpgradePathInfo.WifiLanSocket) throws(NearbyError) {
        let count = socket.addressCandidates.count
        guard count <= UpgradeAddressRules.maxCandidates else {
            throw NearbyError(
                .invalidFrame, "the upgrade path offers \(count) addresses, more than \(UpgradeAddressRules.maxCandidates)")
        }
        var addresses = socket.addressCandidates.map { Array($0.ipAddress) }
        if socket.hasIpAddress { addresses.append(Array(socket.ipAddress)) }
        for address in addresses {
            if let refusal = UpgradeAddressRules.refusal(address) {
                let text = IPAddressText.format(address) ?? "\(address.count) bytes"
                throw NearbyError(.invalidFrame, "refusing the upgrade path: \(text) is \(refusal)")
            }
        }
    }

    /// The hosts and ports of a WIFI_LAN path, candidates first, without repeats.
    static func upgradeTargets(_ socket: UpgradePathInfo.WifiLanSocket) -> [(String, Int)] {
        var targets: [(String, Int)] = []
        for candidate in socket.addressCandidates {
            if let host = IPAddressText.format(Array(candidate.ipAddress)), (1...65_535).contains(candidate.port) {
                targets.append((host, Int(candidate.port)))
            }
        }
        if socket.hasIpAddress, let host = IPAddressText.format(Array(socket.ipAddress)),
            (1...65_535).contains(socket.wifiPort), !targets.contains(where: { $0 == (host, Int(socket.wifiPort)) })
        {
            targets.append((host, Int(socket.wifiPort)))
        }
        return targets
    }

    /// This host's addresses a LAN peer can reach: IPv4 (and global IPv6 when asked), no loopback or link-local.
    static func upgradeAddresses(includeIPv6: Bool) throws -> [[UInt8]] {
        let devices: [NIONetworkDevice]
        do {
            devices = try System.enumerateDevices()
        } catch {
            throw NearbyError(.mediumUnavailable, "cannot list network interfaces", cause: error)
        }
        var result: [[UInt8]] = []
        for device in devices {
            guard let text = device.address?.ipAddress, let bytes = IPAddressText.parse(text) else { continue }
            guard bytes.count == 4 || includeIPv6 else { continue }
            guard !OfflineFrameValidator.isRefusedUpgradeAddress(bytes), !result.contains(bytes) else { continue }
            result.append(bytes)
        }
        return result
    }
}

/// IP address literals to and from their 4- or 16-byte network-order values.
enum IPAddressText {
    /// The bytes of an IPv4 or IPv6 literal (a zone suffix is ignored), or `nil`.
    static func parse(_ text: String) -> [UInt8]? {
        let bare = String(text.split(separator: "%", maxSplits: 1).first ?? "")
        var v4 = in_addr()
        if inet_pton(AF_INET, bare, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, bare, &v6) == 1 {
            return withUnsafeBytes(of: &v6) { Array($0) }
        }
        return nil
    }

    /// The literal of a 4- or 16-byte address, or `nil` for another length.
    static func format(_ bytes: [UInt8]) -> String? {
        let family: Int32
        switch bytes.count {
        case 4: family = AF_INET
        case 16: family = AF_INET6
        default: return nil
        }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let ok = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count)) != nil
        }
        guard ok, let end = buffer.firstIndex(of: 0) else { return nil }
        return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
