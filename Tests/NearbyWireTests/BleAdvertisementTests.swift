import NearbyTestSupport
import NearbyWire
import Testing

@Suite("BLE Connections advertisement", .timeLimit(.minutes(5)))
struct BleConnectionsAdvertisementTests {
    let hash: [UInt8] = [0xFC, 0x9F, 0x5E]

    @Test("regular form layout")
    func regularLayout() throws {
        let advertisement = try BleConnectionsAdvertisement.regular(
            pcp: .p2pPointToPoint, serviceIDHash: hash, endpointID: EndpointID("ABCD"), endpointInfo: [1, 2, 3])
        #expect(advertisement.encodedBytes == advertisementTestBytes(hex: "23 FC9F5E 41424344 03 010203 000000000000 00 00"))
        let decoded = try BleConnectionsAdvertisement(decoding: advertisement.encodedBytes, form: .regular)
        #expect(decoded == advertisement)
        #expect(decoded.form == .regular)
        #expect(decoded.bluetoothMACAddress == nil)
    }

    @Test("regular form with MAC, UWB and WebRTC round-trips")
    func regularRoundTrip() throws {
        let mac: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66]
        let advertisement = try BleConnectionsAdvertisement.regular(
            pcp: .p2pCluster, serviceIDHash: hash, endpointID: EndpointID("Z9Y8"),
            endpointInfo: Array(repeating: 0xEE, count: 131), bluetoothMACAddress: mac, uwbAddress: [0xAB, 0xCD],
            isWebRTCConnectable: true)
        let bytes = advertisement.encodedBytes
        #expect(bytes.count == 1 + 3 + 4 + 1 + 131 + 6 + 1 + 2 + 1)
        #expect(bytes.suffix(4) == [0x02, 0xAB, 0xCD, 0x01])
        let decoded = try BleConnectionsAdvertisement(decoding: bytes, form: .regular)
        #expect(decoded == advertisement)
        #expect(decoded.bluetoothMACAddress == mac)
        #expect(decoded.isWebRTCConnectable)
        // An all-zero MAC means "none".
        let zeroMAC = try BleConnectionsAdvertisement.regular(
            pcp: .p2pCluster, serviceIDHash: hash, endpointID: EndpointID("Z9Y8"), endpointInfo: [1],
            bluetoothMACAddress: [0, 0, 0, 0, 0, 0])
        #expect(zeroMAC.bluetoothMACAddress == nil)
    }

    @Test("regular form: UWB and extra byte are optional on read")
    func regularOptionalTail() throws {
        let withoutTail = advertisementTestBytes(hex: "22 010203 41424344 01 7A 112233445566")
        let decoded = try BleConnectionsAdvertisement(decoding: withoutTail, form: .regular)
        #expect(decoded.pcp == .p2pCluster)
        #expect(decoded.endpointInfo == [0x7A])
        #expect(decoded.uwbAddress.isEmpty)
        #expect(!decoded.isWebRTCConnectable)
        let uwbOnly = try BleConnectionsAdvertisement(decoding: withoutTail + [0x01, 0x99], form: .regular)
        #expect(uwbOnly.uwbAddress == [0x99])
        let trailing = try BleConnectionsAdvertisement(decoding: withoutTail + [0x00, 0x01, 0xFF, 0xFF], form: .regular)
        #expect(trailing.isWebRTCConnectable)
    }

    @Test("fast form layout and round trip")
    func fastLayout() throws {
        let advertisement = try BleConnectionsAdvertisement.fast(
            pcp: .p2pPointToPoint, endpointID: EndpointID("ABCD"), endpointInfo: [1, 2, 3])
        #expect(advertisement.encodedBytes == advertisementTestBytes(hex: "23 41424344 03 010203"))
        #expect(try BleConnectionsAdvertisement(decoding: advertisement.encodedBytes, form: .fast) == advertisement)

        let withUwb = try BleConnectionsAdvertisement.fast(
            pcp: .p2pStar, endpointID: EndpointID("ABCD"), endpointInfo: Array(repeating: 9, count: 17), uwbAddress: [0xAA, 0xBB])
        #expect(withUwb.encodedBytes.suffix(3) == [0x02, 0xAA, 0xBB])
        let decoded = try BleConnectionsAdvertisement(decoding: withUwb.encodedBytes, form: .fast)
        #expect(decoded == withUwb)
        #expect(decoded.serviceIDHash.isEmpty)
        #expect(decoded.form == .fast)
    }

    @Test("rejects malformed regular advertisements", arguments: [
        ("empty", ""),
        ("too short", "23 FC9F5E 41424344 01"),
        ("empty endpoint info", "23 FC9F5E 41424344 00 000000000000 00 00"),
        ("endpoint info 132", "23 FC9F5E 41424344 84" + String(repeating: "00", count: 132 + 6)),
        ("endpoint info past end", "23 FC9F5E 41424344 10 0102 000000000000"),
        ("MAC truncated", "23 FC9F5E 41424344 02 0102 0000000000"),
        ("UWB past end", "23 FC9F5E 41424344 01 01 000000000000 04 AABB"),
        ("version 2", "43 FC9F5E 41424344 01 01 000000000000 00 00"),
        ("version 0", "03 FC9F5E 41424344 01 01 000000000000 00 00"),
        ("PCP 0", "20 FC9F5E 41424344 01 01 000000000000 00 00"),
        ("PCP 4", "24 FC9F5E 41424344 01 01 000000000000 00 00"),
        ("control char in endpoint ID", "23 FC9F5E 4142430A 01 01 000000000000 00 00"),
    ])
    func rejectsMalformedRegular(_ label: String, _ hex: String) {
        expectNearbyError(.invalidAdvertisement) {
            _ = try BleConnectionsAdvertisement(decoding: advertisementTestBytes(hex: hex), form: .regular)
        }
    }

    @Test("rejects malformed fast advertisements", arguments: [
        ("empty", ""),
        ("too short", "23 41424344"),
        ("empty endpoint info", "23 41424344 00"),
        ("endpoint info 18", "23 41424344 12" + String(repeating: "00", count: 18)),
        ("endpoint info past end", "23 41424344 05 0102"),
        ("UWB past end", "23 41424344 01 01 03 AA"),
        ("version 2", "43 41424344 01 01"),
        ("PCP 5", "25 41424344 01 01"),
    ])
    func rejectsMalformedFast(_ label: String, _ hex: String) {
        expectNearbyError(.invalidAdvertisement) {
            _ = try BleConnectionsAdvertisement(decoding: advertisementTestBytes(hex: hex), form: .fast)
        }
    }

    @Test("rejects bad caller input")
    func rejectsBadArguments() throws {
        let id = try EndpointID("ABCD")
        expectNearbyError(.invalidArgument) {
            _ = try BleConnectionsAdvertisement.regular(pcp: .p2pStar, serviceIDHash: hash, endpointID: id, endpointInfo: [])
        }
        expectNearbyError(.invalidArgument) {
            _ = try BleConnectionsAdvertisement.regular(
                pcp: .p2pStar, serviceIDHash: hash, endpointID: id, endpointInfo: Array(repeating: 0, count: 132))
        }
        expectNearbyError(.invalidArgument) {
            _ = try BleConnectionsAdvertisement.regular(pcp: .p2pStar, serviceIDHash: [1, 2], endpointID: id, endpointInfo: [1])
        }
        expectNearbyError(.invalidArgument) {
            _ = try BleConnectionsAdvertisement.regular(
                pcp: .p2pStar, serviceIDHash: hash, endpointID: id, endpointInfo: [1], bluetoothMACAddress: [1, 2, 3, 4, 5])
        }
        expectNearbyError(.invalidArgument) {
            _ = try BleConnectionsAdvertisement.regular(
                pcp: .p2pStar, serviceIDHash: hash, endpointID: id, endpointInfo: [1], uwbAddress: Array(repeating: 0, count: 256))
        }
        expectNearbyError(.invalidArgument) { _ = try BleConnectionsAdvertisement.fast(pcp: .p2pStar, endpointID: id, endpointInfo: []) }
        expectNearbyError(.invalidArgument) {
            _ = try BleConnectionsAdvertisement.fast(pcp: .p2pStar, endpointID: id, endpointInfo: Array(repeating: 0, count: 18))
        }
    }
}

@Suite("BLE medium advertisement and device token", .timeLimit(.minutes(5)))
struct BleMediumAdvertisementTests {
    let hash: [UInt8] = [0xFC, 0x9F, 0x5E]
    let token: [UInt8] = [0x59, 0x94]

    @Test("regular form layout: byte 0, hash, big-endian length, data, token")
    func regularLayout() throws {
        let advertisement = try BleMediumAdvertisement.regular(serviceIDHash: hash, data: [0xAA, 0xBB, 0xCC], deviceToken: token)
        #expect(advertisement.encodedBytes == advertisementTestBytes(hex: "48 FC9F5E 00000003 AABBCC 5994"))
        let decoded = try BleMediumAdvertisement(decoding: advertisement.encodedBytes)
        #expect(decoded == advertisement)
        #expect(decoded.version == .v2)
        #expect(decoded.socketVersion == .v2)
        #expect(!decoded.isFast)
        #expect(decoded.psm == nil)
        #expect(decoded.rxInstantConnectionData == nil)
    }

    @Test("extra fields: PSM big-endian and RX-instant-connection data")
    func extraFields() throws {
        let psmOnly = try BleMediumAdvertisement.regular(serviceIDHash: hash, data: [0xAA], deviceToken: token, psm: 0x1234)
        #expect(psmOnly.encodedBytes == advertisementTestBytes(hex: "48 FC9F5E 00000001 AA 5994 01 1234"))
        let rxOnly = try BleMediumAdvertisement.regular(
            serviceIDHash: hash, data: [0xAA], deviceToken: token, rxInstantConnectionData: [9, 8])
        #expect(rxOnly.encodedBytes == advertisementTestBytes(hex: "48 FC9F5E 00000001 AA 5994 02 02 0908"))
        let both = try BleMediumAdvertisement.regular(
            serviceIDHash: hash, data: [0xAA], deviceToken: token, psm: 0x0080, rxInstantConnectionData: [7],
            isSecondProfile: true)
        #expect(both.encodedBytes == advertisementTestBytes(hex: "49 FC9F5E 00000001 AA 5994 03 0080 01 07"))
        for advertisement in [psmOnly, rxOnly, both] {
            #expect(try BleMediumAdvertisement(decoding: advertisement.encodedBytes) == advertisement)
        }
        // Unknown mask bits are ignored; a zero mask means no fields.
        let unknownBits = try BleMediumAdvertisement(decoding: advertisementTestBytes(hex: "48 FC9F5E 00000001 AA 5994 F0"))
        #expect(unknownBits.psm == nil && unknownBits.rxInstantConnectionData == nil)
    }

    @Test("fast form layout")
    func fastLayout() throws {
        let advertisement = try BleMediumAdvertisement.fast(data: [0xAA, 0xBB, 0xCC], deviceToken: token)
        #expect(advertisement.encodedBytes == advertisementTestBytes(hex: "4A 03 AABBCC 5994"))
        let decoded = try BleMediumAdvertisement(decoding: advertisement.encodedBytes)
        #expect(decoded == advertisement)
        #expect(decoded.isFast)
        #expect(decoded.serviceIDHash.isEmpty)
        let secondProfile = try BleMediumAdvertisement.fast(version: .v1, socketVersion: .v1, data: [], deviceToken: token, isSecondProfile: true)
        #expect(secondProfile.encodedBytes == advertisementTestBytes(hex: "27 00 5994"))
        #expect(try BleMediumAdvertisement(decoding: secondProfile.encodedBytes) == secondProfile)
    }

    @Test("size limits: 512 regular, 27 fast")
    func sizeLimits() throws {
        let largest = try BleMediumAdvertisement.regular(serviceIDHash: hash, data: Array(repeating: 1, count: 502), deviceToken: token)
        #expect(largest.encodedBytes.count == 512)
        #expect(try BleMediumAdvertisement(decoding: largest.encodedBytes) == largest)
        expectNearbyError(.invalidArgument) {
            _ = try BleMediumAdvertisement.regular(serviceIDHash: hash, data: Array(repeating: 1, count: 503), deviceToken: token)
        }
        expectNearbyError(.invalidArgument) {
            _ = try BleMediumAdvertisement.regular(
                serviceIDHash: hash, data: Array(repeating: 1, count: 500), deviceToken: token, psm: 1)
        }
        let largestFast = try BleMediumAdvertisement.fast(data: Array(repeating: 1, count: 23), deviceToken: token)
        #expect(largestFast.encodedBytes.count == 27)
        expectNearbyError(.invalidArgument) { _ = try BleMediumAdvertisement.fast(data: Array(repeating: 1, count: 24), deviceToken: token) }
        expectNearbyError(.invalidArgument) { _ = try BleMediumAdvertisement.fast(data: [1], deviceToken: [1]) }
        expectNearbyError(.invalidArgument) { _ = try BleMediumAdvertisement.regular(serviceIDHash: [1], data: [1], deviceToken: token) }
        expectNearbyError(.invalidArgument) {
            _ = try BleMediumAdvertisement.regular(
                serviceIDHash: hash, data: [1], deviceToken: token, rxInstantConnectionData: Array(repeating: 0, count: 256))
        }
    }

    @Test("device token is optional on read")
    func optionalToken() throws {
        let decoded = try BleMediumAdvertisement(decoding: advertisementTestBytes(hex: "48 FC9F5E 00000001 AA"))
        #expect(decoded.deviceToken.isEmpty)
        #expect(decoded.data == [0xAA])
    }

    @Test("rejects malformed medium advertisements", arguments: [
        ("empty", ""),
        ("version 0", "08 FC9F5E 00000000 5994"),
        ("version 3", "68 FC9F5E 00000000 5994"),
        ("socket version 0", "40 FC9F5E 00000000 5994"),
        ("socket version 3", "4C FC9F5E 00000000 5994"),
        ("hash truncated", "48 FC9F"),
        ("length truncated", "48 FC9F5E 0000"),
        ("data past end", "48 FC9F5E 00000004 AABBCC"),
        ("huge length", "48 FC9F5E FFFFFFFF AABBCC"),
        ("fast data past end", "4A 05 AABB"),
        ("fast length missing", "4A"),
        ("PSM truncated", "48 FC9F5E 00000001 AA 5994 01 12"),
        ("RX length missing", "48 FC9F5E 00000001 AA 5994 02"),
        ("RX data past end", "48 FC9F5E 00000001 AA 5994 02 05 0102"),
        ("longer than 512", "48 FC9F5E 000001F6" + String(repeating: "00", count: 502 + 2 + 1)),
    ])
    func rejectsMalformed(_ label: String, _ hex: String) {
        expectNearbyError(.invalidAdvertisement) { _ = try BleMediumAdvertisement(decoding: advertisementTestBytes(hex: hex)) }
    }

    @Test("wraps a Connections advertisement")
    func nesting() throws {
        let inner = try BleConnectionsAdvertisement.fast(pcp: .p2pPointToPoint, endpointID: EndpointID("ABCD"), endpointInfo: Array("Pixel".utf8))
        let outer = try BleMediumAdvertisement.fast(data: inner.encodedBytes, deviceToken: BleDeviceToken.generate())
        let decodedOuter = try BleMediumAdvertisement(decoding: outer.encodedBytes)
        let decodedInner = try BleConnectionsAdvertisement(decoding: decodedOuter.data, form: decodedOuter.isFast ? .fast : .regular)
        #expect(decodedInner == inner)
    }

    @Test("device token: first 2 bytes of SHA-256 of a decimal string")
    func deviceToken() {
        #expect(BleDeviceToken.derive(from: 12345) == [0x59, 0x94])
        var first = SeededGenerator(seed: 3)
        var second = SeededGenerator(seed: 3)
        for _ in 0..<20 {
            let token = BleDeviceToken.generate(using: &first)
            #expect(token.count == BleDeviceToken.length)
            #expect(token == BleDeviceToken.generate(using: &second))
        }
        #expect(BleDeviceToken.generate().count == 2)
    }
}
