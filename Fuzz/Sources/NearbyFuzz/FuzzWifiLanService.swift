import NearbyWire
@testable import NearbyWiFiLAN

/// What a Wi-Fi LAN peer puts in DNS-SD: the service instance name (base64 ``WifiLanServiceInfo``), the TXT record
/// strings and the endpoint info in TXT key `n`, then the whole resolved service through the discovery filter.
func fuzzWifiLanService(_ input: FuzzInput) {
    var input = input
    switch input.byte() % 3 {
    case 0:
        let bytes = input.rest()
        if let info = try? WifiLanServiceInfo(decoding: bytes) {
            let again = try? WifiLanServiceInfo(decoding: info.encodedBytes)
            fuzzCheck(again == info, "service info did not round-trip")
            let byName = try? WifiLanServiceInfo(serviceName: info.serviceName)
            fuzzCheck(byName == info, "service name did not round-trip")
            _ = info.matches(serviceID: "fuzz")
        }
    case 1:
        let text = String(decoding: input.rest(), as: UTF8.self)
        _ = try? WifiLanServiceInfo(serviceName: text)
        if let info = try? WifiLanTXTRecord.decodeEndpointInfo(text) {
            fuzzCheck(info.count <= WifiLanTXTRecord.maxEndpointInfoLength, "endpoint info over the limit")
        }
    default:
        let instanceName = String(decoding: input.chunk8(), as: UTF8.self)
        var strings: [[UInt8]] = []
        while !input.isAtEnd { strings.append(input.chunk8()) }
        let txt = DNSSDTXTRecord.decode(strings)
        if let encoded = try? DNSSDTXTRecord.encode(txt) {
            fuzzCheck(DNSSDTXTRecord.decode(encoded) == txt, "TXT record did not round-trip")
        }
        let service = DNSSDResolvedService(
            instanceName: instanceName, serviceType: "_FAKE._tcp", hostName: "fuzz.local",
            addresses: ["192.0.2.1", "fe80::1"], port: 1234, txt: txt, interfaceIndex: 1)
        for pcp in PCP.allCases {
            _ = WiFiLANDiscoveredService.endpoint(from: service, serviceID: "fuzz", pcp: pcp)
        }
    }
}
