import NearbyCore
import NearbyWire
import Testing

import NearbyBLE

/// BLE discovery finds only endpoints advertising the discoverer's strategy (PCP), in both advertisement forms.
@Suite("BLE discovery by strategy", .timeLimit(.minutes(5)))
struct BLEDiscoveryStrategyTests {
    static let pairs = PCP.allCases.flatMap { advertised in PCP.allCases.map { (advertised, $0) } }

    @Test("fast and regular advertisements are found only by a discoverer of the same PCP", arguments: pairs)
    func samePCPOnly(advertised: PCP, discovering: PCP) throws {
        let serviceID = "com.example.ble"
        let hash = ServiceIDHash.advertisementHash(serviceID: serviceID)
        let fast = try BleMediumAdvertisement.fast(
            data: BleConnectionsAdvertisement.fast(
                pcp: advertised, endpointID: EndpointID("FAST"), endpointInfo: Array("f".utf8)).encodedBytes,
            deviceToken: [1, 2])
        let regular = try BleMediumAdvertisement.regular(
            serviceIDHash: hash,
            data: BleConnectionsAdvertisement.regular(
                pcp: advertised, serviceIDHash: hash, endpointID: EndpointID("REGU"), endpointInfo: Array("r".utf8)
            ).encodedBytes,
            deviceToken: [3, 4], psm: 0x0083)
        var tracker = BLEDiscoveryTracker(serviceID: serviceID, pcp: discovering, lostTimeout: .seconds(12))
        let logger = BLETestEnvironment.logger("test")
        for (index, advertisement) in [fast, regular].enumerated() {
            let report = AdvertisingReport(
                eventType: 1, isExtended: true, address: BLEAddress(string: "C0:00:00:00:00:0\(index + 1)")!,
                data: AdvertisingData.build(serviceUUID: 0xFEF3, serviceData: advertisement.encodedBytes, maxLength: 251),
                rssi: -50)
            let found = tracker.observe(report, now: .zero, logger: logger).contains {
                if case .report(.found) = $0 { true } else { false }
            }
            #expect(found == (advertised == discovering), "\(advertised) advertised, \(discovering) discovering")
        }
    }
}
