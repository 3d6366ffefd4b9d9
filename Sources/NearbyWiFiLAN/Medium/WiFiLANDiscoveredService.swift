import NearbyCore
import NearbyWire

/// Turns a resolved DNS-SD service into the endpoint it advertises, applying the discoverer's filters.
enum WiFiLANDiscoveredService {
    /// Why a resolved service is not reported.
    enum Rejection: Error, CustomStringConvertible {
        /// The instance name is not a Wi-Fi LAN service info.
        case unreadableName(NearbyError)
        /// The service-ID hash in the name is another service's.
        case otherService
        /// The endpoint uses another strategy.
        case otherPCP(PCP)
        /// The TXT record has no `n` key.
        case missingEndpointInfo
        /// The `n` key does not decode.
        case badEndpointInfo(NearbyError)
        /// The service was resolved without an address or port.
        case noRoute
        /// Every address the service was resolved to is one we must not connect to (``DiscoveredAddressRules``).
        case refusedAddresses([String])

        var description: String {
            switch self {
            case .unreadableName(let error): "instance name is not a Wi-Fi LAN service info: \(error.message)"
            case .otherService: "service-ID hash differs from the one discovered"
            case .otherPCP(let pcp): "advertises strategy \(pcp)"
            case .missingEndpointInfo: "TXT record has no \"\(WifiLanTXTRecord.endpointInfoKey)\" key"
            case .badEndpointInfo(let error): "bad endpoint info in the TXT record: \(error.message)"
            case .noRoute: "resolved without an address or a port"
            case .refusedAddresses(let reasons): "no address we may connect to: \(reasons.joined(separator: ", "))"
            }
        }

        /// Whether this is the ordinary case of another app's or strategy's service, not worth more than a debug line.
        var isExpected: Bool {
            switch self {
            case .otherService, .otherPCP: true
            default: false
            }
        }
    }

    /// The endpoint `service` advertises, if it belongs to `serviceID` with strategy `pcp`, with a route to those of
    /// its addresses `rules` accept.
    static func endpoint(
        from service: DNSSDResolvedService, serviceID: String, pcp: PCP, rules: DiscoveredAddressRules = .init()
    ) -> Result<DiscoveredEndpoint, Rejection> {
        let info: WifiLanServiceInfo
        do {
            info = try WifiLanServiceInfo(serviceName: service.instanceName)
        } catch {
            let nearbyError = error as? NearbyError ?? NearbyError(.invalidAdvertisement, "\(error)")
            return .failure(.unreadableName(nearbyError))
        }
        guard info.matches(serviceID: serviceID) else { return .failure(.otherService) }
        guard info.pcp == pcp else { return .failure(.otherPCP(info.pcp)) }
        guard let encodedInfo = service.txt[WifiLanTXTRecord.endpointInfoKey] else {
            return .failure(.missingEndpointInfo)
        }
        let endpointInfo: [UInt8]
        do {
            endpointInfo = try WifiLanTXTRecord.decodeEndpointInfo(String(decoding: encodedInfo, as: UTF8.self))
        } catch {
            let nearbyError = error as? NearbyError ?? NearbyError(.invalidAdvertisement, "\(error)")
            return .failure(.badEndpointInfo(nearbyError))
        }
        guard !service.addresses.isEmpty, service.port != 0 else { return .failure(.noRoute) }
        var refused: [String] = []
        let accepted = service.addresses.filter { address in
            let fromLocal = service.addressesFromLocalRecords.contains(address)
            guard let reason = rules.refusal(address, fromLocalRecord: fromLocal) else { return true }
            refused.append("\(address) (\(reason))")
            return false
        }
        let hosts = ipv4First(accepted)
        guard !hosts.isEmpty else { return .failure(.refusedAddresses(refused)) }
        return .success(
            DiscoveredEndpoint(
                endpointID: info.endpointID.value,
                endpointInfo: endpointInfo,
                medium: .wifiLAN,
                route: .tcp(hosts: hosts, port: Int(service.port))
            )
        )
    }

    /// `addresses` with the IPv4 ones first, each group keeping its order.
    static func ipv4First(_ addresses: [String]) -> [String] {
        addresses.filter { !$0.contains(":") } + addresses.filter { $0.contains(":") }
    }
}
