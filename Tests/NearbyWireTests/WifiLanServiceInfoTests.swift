import NearbyWire
import Testing

@Suite("Wi-Fi LAN service name and TXT record", .timeLimit(.minutes(5)))
struct WifiLanServiceInfoTests {
    @Test("Quick Share vector: PCP 3 + ABCD + NearbySharing → I0FCQ0T8n14AAA")
    func quickShareVector() throws {
        let info = WifiLanServiceInfo(pcp: .p2pPointToPoint, endpointID: try EndpointID("ABCD"), serviceID: "NearbySharing")
        #expect(info.encodedBytes == advertisementTestBytes(hex: "23 41424344 FC9F5E 00 00"))
        #expect(info.encodedBytes.count == WifiLanServiceInfo.encodedLengthWithoutUwbAddress)
        #expect(info.serviceName == "I0FCQ0T8n14AAA")

        let decoded = try WifiLanServiceInfo(serviceName: "I0FCQ0T8n14AAA")
        #expect(decoded == info)
        #expect(decoded.pcp == .p2pPointToPoint)
        #expect(decoded.endpointID.value == "ABCD")
        #expect(decoded.serviceIDHash == [0xFC, 0x9F, 0x5E])
        #expect(decoded.uwbAddress.isEmpty)
        #expect(!decoded.isWebRTCConnectable)
        #expect(decoded.matches(serviceID: "NearbySharing"))
        #expect(!decoded.matches(serviceID: "NearbySharingX"))
    }

    @Test("decodes the 9-byte form and padded names")
    func decodesShortAndPadded() throws {
        let nineBytes = advertisementTestBytes(hex: "21 57585946 010203 00")
        let name = WebSafeBase64.encode(nineBytes)
        let decoded = try WifiLanServiceInfo(serviceName: name)
        #expect(decoded.pcp == .p2pStar)
        #expect(decoded.endpointID.value == "WXYF")
        #expect(!decoded.isWebRTCConnectable)
        // 10 bytes need 2 padding characters when padded.
        #expect(try WifiLanServiceInfo(serviceName: "I0FCQ0T8n14AAA==").endpointID.value == "ABCD")
    }

    @Test("round-trips WebRTC flag and UWB address")
    func roundTrips() throws {
        for pcp in PCP.allCases {
            for webRTC in [false, true] {
                for uwb: [UInt8] in [[], [0xAA, 0xBB], Array(repeating: 0x11, count: 8), Array(repeating: 7, count: 37)] {
                    let info = try WifiLanServiceInfo(
                        pcp: pcp, endpointID: EndpointID("Q9Z0"), serviceIDHash: [1, 2, 3], uwbAddress: uwb,
                        isWebRTCConnectable: webRTC)
                    #expect(info.serviceName.utf8.count <= 63)
                    #expect(try WifiLanServiceInfo(serviceName: info.serviceName) == info)
                    #expect(try WifiLanServiceInfo(decoding: info.encodedBytes) == info)
                }
            }
        }
        let connectable = WifiLanServiceInfo(pcp: .p2pCluster, endpointID: try EndpointID("ABCD"), serviceID: "x", isWebRTCConnectable: true)
        #expect(connectable.encodedBytes.last == 0x01)
    }

    @Test("rejects malformed names", arguments: [
        ("wrong version 2", WebSafeBase64.encode(advertisementTestBytes(hex: "43 41424344 FC9F5E 00 00"))),
        ("version 0", WebSafeBase64.encode(advertisementTestBytes(hex: "03 41424344 FC9F5E 00 00"))),
        ("PCP 0", WebSafeBase64.encode(advertisementTestBytes(hex: "20 41424344 FC9F5E 00 00"))),
        ("PCP 4", WebSafeBase64.encode(advertisementTestBytes(hex: "24 41424344 FC9F5E 00 00"))),
        ("PCP 31", WebSafeBase64.encode(advertisementTestBytes(hex: "3F 41424344 FC9F5E 00 00"))),
        ("8-byte form", WebSafeBase64.encode(advertisementTestBytes(hex: "23 41424344 FC9F5E"))),
        ("empty", ""),
        ("invalid character", "I0FCQ0T8n14AA!"),
        ("standard alphabet", "I0FCQ0T8n14+AA"),
        ("dangling character", "I0FCQ0T8n14AA"),
        ("UWB length past end", WebSafeBase64.encode(advertisementTestBytes(hex: "23 41424344 FC9F5E 05 AABB"))),
        ("non-printable endpoint ID", WebSafeBase64.encode(advertisementTestBytes(hex: "23 41420044 FC9F5E 00 00"))),
    ])
    func rejectsMalformed(_ label: String, _ name: String) {
        expectNearbyError(.invalidAdvertisement) { _ = try WifiLanServiceInfo(serviceName: name) }
    }

    @Test("rejects bad caller input")
    func rejectsBadArguments() throws {
        let id = try EndpointID("ABCD")
        expectNearbyError(.invalidArgument) { _ = try WifiLanServiceInfo(pcp: .p2pStar, endpointID: id, serviceIDHash: [1, 2]) }
        expectNearbyError(.invalidArgument) {
            _ = try WifiLanServiceInfo(pcp: .p2pStar, endpointID: id, serviceIDHash: [1, 2, 3], uwbAddress: Array(repeating: 0, count: 38))
        }
    }

    @Test("TXT key n: endpoint info up to 131 bytes")
    func txtRecord() throws {
        #expect(WifiLanTXTRecord.endpointInfoKey == "n")
        #expect(WifiLanTXTRecord.maxEndpointInfoLength == 131)
        let info = (0..<131).map { UInt8($0) }
        let value = try WifiLanTXTRecord.encodeEndpointInfo(info)
        #expect(value.utf8.count == 175)
        #expect(!value.contains("="))
        #expect(try WifiLanTXTRecord.decodeEndpointInfo(value) == info)
        #expect(try WifiLanTXTRecord.encodeEndpointInfo([]) == "")
        #expect(try WifiLanTXTRecord.decodeEndpointInfo("") == [])
        #expect(try WifiLanTXTRecord.encodeEndpointInfo([0xFB, 0xFF]) == "-_8")
        #expect(try WifiLanTXTRecord.decodeEndpointInfo("-_8=") == [0xFB, 0xFF])

        expectNearbyError(.invalidArgument) { _ = try WifiLanTXTRecord.encodeEndpointInfo(Array(repeating: 0, count: 132)) }
        expectNearbyError(.invalidAdvertisement) {
            _ = try WifiLanTXTRecord.decodeEndpointInfo(WebSafeBase64.encode(Array(repeating: 0, count: 132)))
        }
        expectNearbyError(.invalidAdvertisement) { _ = try WifiLanTXTRecord.decodeEndpointInfo("abc$") }
        expectNearbyError(.invalidAdvertisement) { _ = try WifiLanTXTRecord.decodeEndpointInfo("+/8") }
    }
}
