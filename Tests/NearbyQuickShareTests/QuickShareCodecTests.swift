import Foundation
import NearbyCore
import NearbySecurity
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyQuickShare

/// Known-answer vectors for the Quick Share codecs, from the public descriptions: Google's `sharing/advertisement.cc`
/// layout, NearDrop's PROTOCOL.md (instance name, endpoint info, beacon prefix), rquickshare's `utils.rs` and
/// `blea.rs` (instance name bytes, the beacon it sends), and Google's sharing tests (the PIN of token 00 01 02).
@Suite("Quick Share codecs", .timeLimit(.minutes(1)))
struct QuickShareCodecTests {
    // MARK: Instance name and service type

    @Test func instanceNameIsThePublicTenBytes() throws {
        #expect(try QuickShareServiceName.instanceNameBytes(endpointID: "ABCD")
            == [0x23, 0x41, 0x42, 0x43, 0x44, 0xFC, 0x9F, 0x5E, 0x00, 0x00])
        #expect(try QuickShareServiceName.instanceName(endpointID: "ABCD") == "I0FCQ0T8n14AAA")
        #expect(QuickShareServiceName.serviceType == "_FC9F5ED42C8A._tcp")
    }

    @Test func theEngineDerivesTheSameNamesFromTheServiceID() throws {
        // The Wi-Fi LAN medium advertises with these: so Quick Share needs no special naming in the medium.
        #expect(ServiceIDHash.wifiLanServiceType(serviceID: QuickShareServiceName.serviceID).name == QuickShareServiceName.serviceType)
        for id in ["ABCD", "Z9X1", "0000"] {
            let info = WifiLanServiceInfo(
                pcp: QuickShareServiceName.strategy.pcp, endpointID: try EndpointID(id), serviceID: QuickShareServiceName.serviceID)
            #expect(info.serviceName == (try QuickShareServiceName.instanceName(endpointID: id)))
            #expect(try QuickShareServiceName.endpointID(fromInstanceName: info.serviceName) == id)
        }
    }

    @Test func instanceNamesOfOtherServicesOrStrategiesAreRefused() throws {
        let other = WifiLanServiceInfo(pcp: .p2pPointToPoint, endpointID: try EndpointID("ABCD"), serviceID: "other")
        expectNearbyError(.invalidAdvertisement) { try QuickShareServiceName.endpointID(fromInstanceName: other.serviceName) }
        let cluster = WifiLanServiceInfo(pcp: .p2pCluster, endpointID: try EndpointID("ABCD"), serviceID: "NearbySharing")
        expectNearbyError(.invalidAdvertisement) { try QuickShareServiceName.endpointID(fromInstanceName: cluster.serviceName) }
        expectNearbyError(.invalidAdvertisement) { try QuickShareServiceName.endpointID(fromInstanceName: "!!!") }
    }

    // MARK: Endpoint info

    @Test func visibleLaptopEncodesAsTheAdvertisementLayout() throws {
        let info = try QuickShareEndpointInfo(
            deviceType: .laptop, salt: [0x01, 0x02], encryptedMetadataKey: Array(0x10...0x1D), deviceName: "a_device_name")
        // version 0, visible (bit 4 clear), laptop (3) in bits 3–1 → 0x06; salt; key; length 13; name.
        let expected: [UInt8] = [0x06, 0x01, 0x02] + Array(0x10...0x1D) + [13] + Array("a_device_name".utf8)
        #expect(info.bytes == expected)
        #expect(try QuickShareEndpointInfo(decoding: expected) == info)
        #expect(QuickShareServiceName.txtValue(for: info) == WebSafeBase64.encode(expected))
    }

    @Test func hiddenPhoneAndVendorRecordDecode() throws {
        // A hidden phone (bit 4 set, type 1): no name; then a Samsung vendor TLV (type 2, length 1, value 1).
        let bytes: [UInt8] = [0x12, 0xAA, 0xBB] + Array(repeating: 0x55, count: 14) + [0x02, 0x01, 0x01]
        let info = try QuickShareEndpointInfo(decoding: bytes)
        #expect(info.deviceName == nil)
        #expect(info.deviceType == .phone)
        #expect(info.vendorID == 1)
        #expect(info.bytes == bytes)
    }

    @Test func versionOneAndEveryDeviceTypeDecode() throws {
        for type in QuickShareDeviceType.allCases {
            let bytes: [UInt8] = [1 << 5 | type.rawValue << 1, 0, 0] + Array(repeating: 0, count: 14) + [1, 0x41]
            let info = try QuickShareEndpointInfo(decoding: bytes)
            #expect(info.version == 1 && info.deviceType == type && info.deviceName == "A")
        }
        // Type 7 has no meaning: unknown, as Google's parser reads it.
        let seven = try QuickShareEndpointInfo(decoding: [0x0E, 0, 0] + Array(repeating: 0, count: 14) + [1, 0x41])
        #expect(seven.deviceType == .unknown)
    }

    @Test func badEndpointInfoIsRefused() {
        let key = [UInt8](repeating: 0, count: 14)
        let cases: [[UInt8]] = [
            [],
            [0x06, 0, 0] + key.prefix(13),  // 16 bytes
            [0x46, 0, 0] + key + [1, 0x41],  // version 2
            [0x06, 0, 0] + key + [0],  // a visible name of length 0
            [0x06, 0, 0] + key,  // visible, no length byte
            [0x06, 0, 0] + key + [5, 0x41],  // name past the end
            [0x06, 0, 0] + key + [2, 0xC3, 0x28],  // not UTF-8
            [0x06, 0, 0] + key + [1, 0x41, 0x02, 0x05, 0x01],  // TLV past the end
        ]
        for bytes in cases {
            expectNearbyError(.invalidAdvertisement) { try QuickShareEndpointInfo(decoding: bytes) }
        }
    }

    @Test func randomGarbageNeverTraps() throws {
        var random = SeededGenerator(seed: 26)
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...80, using: &random)
            let bytes = (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &random) }
            if let info = try? QuickShareEndpointInfo(decoding: bytes) {
                #expect(try QuickShareEndpointInfo(decoding: info.bytes) == info)
            }
            _ = try? QuickShareFastInitBeacon(decoding: bytes)
            _ = try? QuickShareFrame(decoding: bytes)
        }
    }

    @Test func visibleInfoFitsAnAdvertisementWhateverTheName() {
        var random = SeededGenerator(seed: 1)
        let long = String(repeating: "é", count: 200)
        let info = QuickShareEndpointInfo.visible(name: long, deviceType: .tablet, using: &random)
        #expect(info.bytes.count <= 131)
        #expect(info.deviceName?.isEmpty == false)
        #expect((try? QuickShareEndpointInfo(decoding: info.bytes)) == info)
        expectNearbyError(.invalidArgument) {
            try QuickShareEndpointInfo(
                deviceType: .laptop, salt: [1], encryptedMetadataKey: Array(repeating: 0, count: 14), deviceName: "x")
        }
    }

    // MARK: Fast-init beacon

    @Test func theBeaconRquickshareSendsDecodes() throws {
        // rquickshare core_lib/src/hdl/blea.rs SERVICE_DATA (NearDrop describes the same prefix fc 12 8e 01 42 00…).
        let bytes: [UInt8] = [
            252, 18, 142, 1, 66, 0, 0, 0, 0, 0, 0, 0, 0, 0, 191, 45, 91, 160, 225, 216, 117, 36, 202, 0,
        ]
        let beacon = try QuickShareFastInitBeacon(decoding: bytes)
        #expect(beacon.version == 0 && beacon.typeValue == 0)
        #expect(!beacon.uwbSupported && beacon.senderCertificateSupported)
        #expect(beacon.adjustedTxPower == 0x42)
        #expect(beacon.uwbAddress == Array(repeating: 0, count: 8))
        #expect(beacon.salt == 191)
        #expect(beacon.secretIDHash == [45, 91, 160, 225, 216, 117, 36, 202])
        #expect(!beacon.requireBluetoothAdvertising && !beacon.selfOnlyAdvertising)
        #expect(beacon.bytes == bytes)
    }

    @Test func ourBeaconHasByteThreeZeroAndANonZeroHash() {
        var random = SeededGenerator(seed: 3)
        let notify = QuickShareFastInitBeacon.sharing(type: .notify, using: &random)
        #expect(notify.bytes.count == 24)
        #expect(Array(notify.bytes.prefix(5)) == [0xFC, 0x12, 0x8E, 0x00, 0x42])
        #expect(notify.secretIDHash.contains { $0 != 0 })
        let silent = QuickShareFastInitBeacon.sharing(type: .silent, using: &random)
        #expect(silent.bytes[3] == 0x04)
        #expect(QuickShareWakeUpBeacon.advertisement(notify).serviceData == ["0000fe2c-0000-1000-8000-00805f9b34fb": notify.bytes])
        #expect(QuickShareWakeUpBeacon.advertisement(notify).kind == .broadcast)
    }

    @Test func badBeaconsAreRefused() {
        expectNearbyError(.invalidAdvertisement) { try QuickShareFastInitBeacon(decoding: [0xFC, 0x12, 0x8E]) }
        expectNearbyError(.invalidAdvertisement) {
            try QuickShareFastInitBeacon(decoding: [0xFC, 0x12, 0x8F] + Array(repeating: 0, count: 21))
        }
    }

    // MARK: PIN

    @Test func pinIsGooglesFourDigitHashOfTheAuthenticationToken() {
        // Google's sharing tests: raw token 00 01 02 → "1953" (0 + 1·31 + 2·31²). Google's byte_utils_test:
        // "rawABCDE" → 0392, and bytes with negative values "raw" D5 01 E4 03 81 → 6251.
        #expect(VerificationCodes.digits(from: [0, 1, 2]) == "1953")
        #expect(VerificationCodes.digits(from: Array("rawABCDE".utf8)) == "0392")
        #expect(VerificationCodes.digits(from: Array("raw".utf8) + [0xD5, 0x01, 0xE4, 0x03, 0x81]) == "6251")
        #expect(VerificationCodes.digits(from: []) == "0000")
    }
}

/// Expects `body` to throw a `NearbyError` with `code`.
func expectNearbyError<T>(_ code: NearbyError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> T) {
    do {
        _ = try body()
        Issue.record("expected \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as NearbyError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
}
