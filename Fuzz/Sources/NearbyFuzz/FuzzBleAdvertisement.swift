import Logging
import NearbyBLE
import NearbyWire

/// Nearby BLE advertisements as a scanner receives them: the advertisement header, the medium advertisement,
/// the Connections advertisement (regular and fast), the Bloom filter, and the whole advertising-data path through
/// ``BLEDiscoveryTracker``. Anything that decodes must decode again, unchanged, from its own encoding.
func fuzzBleAdvertisement(_ input: FuzzInput) {
    var input = input
    let mode = input.byte() % 6
    let bytes = input.rest()
    switch mode {
    case 0:
        if let header = try? BleAdvertisementHeader(decoding: bytes) {
            fuzzCheck((try? BleAdvertisementHeader(decoding: header.encodedBytes)) == header, "header did not round-trip")
        }
    case 1:
        if let medium = try? BleMediumAdvertisement(decoding: bytes) {
            fuzzCheck((try? BleMediumAdvertisement(decoding: medium.encodedBytes)) == medium, "medium advertisement did not round-trip")
        }
    case 2, 3:
        let form: BleConnectionsAdvertisement.Form = mode == 2 ? .regular : .fast
        if let advertisement = try? BleConnectionsAdvertisement(decoding: bytes, form: form) {
            let again = try? BleConnectionsAdvertisement(decoding: advertisement.encodedBytes, form: form)
            fuzzCheck(again == advertisement, "connections advertisement did not round-trip")
        }
    case 4:
        if let filter = try? BleServiceIDBloomFilter(bytes: bytes) {
            _ = filter.possiblyContains("fuzz")
        }
    default:
        let report = AdvertisingReport(
            eventType: 0, isExtended: bytes.count > 31, address: BLEFuzzFixtures.address, data: bytes, rssi: -50)
        _ = try? AdvertisingData.structures(bytes)
        for pcp in PCP.allCases {
            _ = try? BLEDiscoveryTracker.endpoint(from: report, serviceHash: BLEFuzzFixtures.serviceHash, pcp: pcp)
        }
        var tracker = BLEDiscoveryTracker(serviceID: "fuzz", pcp: .p2pCluster, lostTimeout: .seconds(5))
        _ = tracker.observe(report, now: .zero, logger: BLEFuzzFixtures.logger)
    }
}

enum BLEFuzzFixtures {
    static let address = BLEAddress(hciBytes: [1, 2, 3, 4, 5, 0xC6], kind: .random)!
    static let serviceHash = ServiceIDHash.advertisementHash(serviceID: "fuzz")
    static let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })
}
