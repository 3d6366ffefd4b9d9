import Foundation
import NearbyWire
import Testing

/// Which addresses a bandwidth upgrade path may send us to, byte vector by byte vector.
@Suite("Upgrade address rules", .timeLimit(.minutes(5)))
struct UpgradeAddressRulesTests {
    typealias Refusal = UpgradeAddressRules.Refusal

    /// `::ffff:a.b.c.d`
    static func mapped(_ v4: [UInt8]) -> [UInt8] { [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF] + v4 }
    /// `::a.b.c.d` (IPv4-compatible, deprecated)
    static func compatible(_ v4: [UInt8]) -> [UInt8] { [UInt8](repeating: 0, count: 12) + v4 }
    /// A 16-byte address from its first bytes and its last byte.
    static func v6(_ head: [UInt8], last: UInt8) -> [UInt8] { head + [UInt8](repeating: 0, count: 15 - head.count) + [last] }

    static let refused: [([UInt8], Refusal)] = [
        ([0, 0, 0, 0], .unspecified),
        ([0, 1, 2, 3], .unspecified),
        (v6([], last: 0), .unspecified),
        ([127, 0, 0, 1], .loopback),
        ([127, 255, 255, 254], .loopback),
        ([127, 8, 9, 10], .loopback),
        (v6([], last: 1), .loopback),
        (mapped([127, 0, 0, 1]), .loopback),
        (mapped([127, 1, 2, 3]), .loopback),
        (compatible([127, 0, 0, 1]), .loopback),
        (mapped([0, 0, 0, 0]), .unspecified),
        ([169, 254, 0, 1], .linkLocal),
        ([169, 254, 255, 255], .linkLocal),
        (v6([0xFE, 0x80], last: 1), .linkLocal),
        (v6([0xFE, 0xBF, 0xFF], last: 9), .linkLocal),
        (mapped([169, 254, 7, 7]), .linkLocal),
        (compatible([169, 254, 7, 7]), .linkLocal),
        ([224, 0, 0, 251], .multicast),
        ([239, 255, 255, 250], .multicast),
        (v6([0xFF, 0x02], last: 0xFB), .multicast),
        (v6([0xFF, 0x0E], last: 1), .multicast),
        (mapped([224, 0, 0, 1]), .multicast),
        ([255, 255, 255, 255], .broadcast),
        (mapped([255, 255, 255, 255]), .broadcast),
        ([240, 0, 0, 1], .reserved),
        (compatible([10, 77, 0, 1]), .ipv4Compatible),
        ([10, 77, 0], .malformed),
        ([], .malformed),
        ([UInt8](repeating: 1, count: 5), .malformed),
        ([UInt8](repeating: 0x20, count: 17), .malformed),
    ]

    static let usable: [[UInt8]] = [
        [10, 77, 0, 1],  // the test network's veth addresses
        [10, 77, 0, 2],
        [192, 168, 1, 20],
        [172, 16, 0, 1],
        [169, 253, 1, 1],
        [126, 255, 255, 255],
        [128, 0, 0, 1],
        [223, 255, 255, 255],
        [1, 1, 1, 1],
        [192, 168, 1, 255],  // a /24's broadcast address: not knowable without the prefix, left to the kernel
        mapped([10, 77, 0, 1]),
        v6([0x20, 0x01, 0x0D, 0xB8], last: 5),
        v6([0xFD, 0x00], last: 1),
        v6([0xFE, 0xC0], last: 1),  // deprecated site-local, but unicast
        v6([0xFE, 0x7F], last: 1),
    ]

    @Test("Refused addresses, with the reason", arguments: refused)
    func refusedAddress(_ address: [UInt8], _ reason: Refusal) {
        #expect(UpgradeAddressRules.refusal(address) == reason)
        #expect(OfflineFrameValidator.isRefusedUpgradeAddress(address))
    }

    @Test("Unicast addresses of other hosts are usable", arguments: usable)
    func usableAddress(_ address: [UInt8]) {
        #expect(UpgradeAddressRules.refusal(address) == nil)
        #expect(!OfflineFrameValidator.isRefusedUpgradeAddress(address))
    }

    private func expectInvalid(
        _ frame: ProtoOfflineFrame, policy: OfflineFrameValidator.Policy = .init(), mentioning text: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: NearbyError.self, sourceLocation: sourceLocation) {
            try OfflineFrameParser.parse(OfflineFrames.serialize(frame), policy: policy)
        }
        #expect(error?.code == .invalidFrame, sourceLocation: sourceLocation)
        #expect(error?.message.contains(text) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
    }

    @Test("An offer with any refused address is an invalid frame, even next to a usable one")
    func refusedInOffer() {
        // (The builder drops addresses of other lengths; the length rule has its own test.)
        for (address, reason) in Self.refused where reason != .malformed {
            expectInvalid(
                OfflineFrames.upgradePathAvailableWifiLan(addresses: [[10, 77, 0, 1], address], port: 4000),
                mentioning: reason.description)
        }
        // The legacy ip_address field is held to the same rules.
        var legacy = OfflineFrames.upgradePathAvailableWifiLan(addresses: [[10, 77, 0, 1]], port: 4000)
        legacy.v1.bandwidthUpgradeNegotiation.upgradePathInfo.wifiLanSocket.ipAddress = Data([224, 0, 0, 1])
        expectInvalid(legacy, mentioning: "multicast")
    }

    @Test("The test policy lets loopback and link-local through, nothing else")
    func testPolicy() throws {
        let lenient = OfflineFrameValidator.Policy(allowsLoopbackUpgradeAddresses: true)
        for address in [[127, 0, 0, 1], Self.mapped([127, 0, 0, 1]), [169, 254, 1, 1]] as [[UInt8]] {
            _ = try OfflineFrameParser.parse(
                OfflineFrames.serialize(OfflineFrames.upgradePathAvailableWifiLan(addresses: [address], port: 1)),
                policy: lenient)
        }
        for address in [[0, 0, 0, 0], [224, 0, 0, 1], [255, 255, 255, 255]] as [[UInt8]] {
            expectInvalid(
                OfflineFrames.upgradePathAvailableWifiLan(addresses: [address], port: 1), policy: lenient,
                mentioning: "upgrade address")
        }
    }

    @Test("At most 16 address candidates")
    func candidateCount() throws {
        func addresses(_ count: Int) -> [[UInt8]] { (0..<count).map { [10, 0, UInt8($0 / 250), UInt8($0 % 250 + 1)] } }
        _ = try OfflineFrameParser.parse(OfflineFrames.serialize(
            OfflineFrames.upgradePathAvailableWifiLan(addresses: addresses(UpgradeAddressRules.maxCandidates), port: 80)))
        expectInvalid(
            OfflineFrames.upgradePathAvailableWifiLan(addresses: addresses(UpgradeAddressRules.maxCandidates + 1), port: 80),
            mentioning: "17 addresses")
        expectInvalid(OfflineFrames.upgradePathAvailableWifiLan(addresses: addresses(1000), port: 80), mentioning: "1000")
    }
}
