import NearbyCore
import NearbyWire
import Testing

import NearbyBLE

@Suite("ACL and L2CAP encoding", .timeLimit(.minutes(5)))
struct L2CAPCodecTests {
    @Test func aclFragmentationAndReassembly() throws {
        let pdu = L2CAPFrame.encode(cid: 0x40, payload: patternBytes(300, seed: 1))
        let fragments = ACLPacket.fragments(handle: 0x0001, pdu: pdu, maxDataLength: 27)
        #expect(fragments.count == (pdu.count + 26) / 27)
        #expect(fragments.first?.boundary == .firstNonFlushable)
        #expect(fragments.dropFirst().allSatisfy { $0.boundary == .continuing && $0.data.count <= 27 })
        #expect(fragments[0].encoded.prefix(4) == [0x01, 0x00, 27, 0x00])
        #expect(fragments[1].encoded.prefix(2) == [0x01, 0x10])
        var reassembler = L2CAPReassembler()
        var result: [UInt8]?
        for fragment in fragments {
            let decoded = try ACLPacket(decoding: fragment.encoded)
            result = try reassembler.append(decoded)
            if fragment != fragments.last { #expect(result == nil) }
        }
        #expect(result == pdu)
        // A controller that does not fragment (the emulator): one packet, PB=10.
        #expect(try reassembler.append(ACLPacket(handle: 1, boundary: .firstFlushable, data: pdu)) == pdu)
    }

    @Test func reassemblyRejectsBadFragments() throws {
        var reassembler = L2CAPReassembler()
        #expect(throws: NearbyError.self) {
            try reassembler.append(ACLPacket(handle: 1, boundary: .continuing, data: [1, 2, 3]))
        }
        #expect(throws: NearbyError.self) {
            // Length field says 2 bytes of payload, the fragment carries 4.
            try reassembler.append(ACLPacket(handle: 1, boundary: .firstFlushable, data: [2, 0, 0x40, 0, 1, 2, 3, 4]))
        }
        #expect(throws: NearbyError.self) { try ACLPacket(decoding: [0x01, 0x20, 0x05, 0x00, 1]) }
    }

    @Test func creditConnectionRequestMatchesTheRigBytes() throws {
        let request = L2CAPSignal.leCreditConnectionRequest(identifier: 1, psm: 0x81, sourceCID: 0x40, mtu: 1024, mps: 100, credits: 8)
        #expect(request.encoded == [0x14, 0x01, 0x0A, 0x00, 0x81, 0x00, 0x40, 0x00, 0x00, 0x04, 0x64, 0x00, 0x08, 0x00])
        #expect(try L2CAPSignal(decoding: request.encoded) == request)
        let response = try L2CAPSignal(decoding: [0x15, 0x01, 0x0A, 0x00, 0x40, 0x00, 0x00, 0x08, 0x00, 0x08, 0x00, 0x01, 0x00, 0x00])
        #expect(response == .leCreditConnectionResponse(identifier: 1, destinationCID: 0x40, mtu: 2048, mps: 2048, credits: 256, result: 0))
    }

    @Test func otherSignalsRoundTrip() throws {
        let signals: [L2CAPSignal] = [
            .flowControlCredit(identifier: 3, cid: 0x41, credits: 10),
            .disconnectionRequest(identifier: 4, destinationCID: 0x40, sourceCID: 0x41),
            .disconnectionResponse(identifier: 4, destinationCID: 0x40, sourceCID: 0x41),
            .commandReject(identifier: 5, reason: 0, data: []),
            .connectionParameterUpdateResponse(identifier: 6, result: 1),
        ]
        for signal in signals {
            #expect(try L2CAPSignal(decoding: signal.encoded) == signal)
        }
        #expect(L2CAPSignal.flowControlCredit(identifier: 3, cid: 0x41, credits: 10).encoded == [0x16, 3, 4, 0, 0x41, 0, 10, 0])
        #expect(try L2CAPSignal(decoding: [0x55, 9, 1, 0, 7]) == .unknown(code: 0x55, identifier: 9, data: [7]))
    }

    @Test func rejectsMalformedSignaling() {
        let malformed: [[UInt8]] = [
            [],
            [0x14, 1],
            [0x14, 1, 0x0A, 0x00, 0x81, 0x00],  // truncated request
            [0x14, 0, 0x0A, 0x00] + [UInt8](repeating: 0, count: 10),  // identifier 0
            [0x14, 1, 0x08, 0x00] + [UInt8](repeating: 0, count: 8),  // wrong length for the code
            [0x16, 1, 0x04, 0x00, 0x40, 0x00],  // length says 4, has 2
            [0x06, 1, 0x02, 0x00, 0x40, 0x00],
            [0x01, 1, 0x00, 0x00],  // reject without reason
        ]
        for bytes in malformed {
            #expect(throws: NearbyError.self, "\(bytes)") { try L2CAPSignal(decoding: bytes) }
        }
        #expect(throws: NearbyError.self) { try L2CAPFrame.decode([1, 0, 5]) }
        #expect(throws: NearbyError.self) { try L2CAPFrame.decode([5, 0, 5, 0, 1]) }
    }

    @Test func sduSegmentationAndReassembly() throws {
        let sdu = patternBytes(300, seed: 2)
        let segments = KFrameSegmenter.segments(sdu: sdu, mps: 100)
        #expect(segments.map(\.count) == [100, 100, 100, 2])
        #expect(segments[0].prefix(2) == [0x2C, 0x01])
        var reassembler = KFrameReassembler(mtu: 512, mps: 100)
        var out: (sdu: [UInt8], frames: Int)?
        for segment in segments { out = try reassembler.append(segment) }
        #expect(out?.sdu == sdu)
        #expect(out?.frames == 4)
        // An empty SDU is one K-frame holding only the length.
        #expect(KFrameSegmenter.segments(sdu: [], mps: 23) == [[0, 0]])
        #expect(try reassembler.append([0, 0])?.sdu == [])
    }

    @Test func reassemblyEnforcesMTUAndMPS() {
        var reassembler = KFrameReassembler(mtu: 100, mps: 50)
        #expect(throws: NearbyError.self) { try reassembler.append([UInt8](repeating: 0, count: 51)) }
        var second = KFrameReassembler(mtu: 100, mps: 50)
        #expect(throws: NearbyError.self) { try second.append([101, 0, 1, 2]) }  // SDU above MTU
        var third = KFrameReassembler(mtu: 100, mps: 50)
        #expect(throws: NearbyError.self) { try third.append([2, 0, 1, 2, 3]) }  // more data than SDU length
        var fourth = KFrameReassembler(mtu: 100, mps: 50)
        #expect(throws: NearbyError.self) { try fourth.append([1]) }
    }

    @Test func advertisingDataBuildAndParse() throws {
        let data = AdvertisingData.build(serviceUUID: 0xFEF3, serviceData: [1, 2, 3])
        #expect(data == [0x02, 0x01, 0x06, 0x03, 0x03, 0xF3, 0xFE, 0x06, 0x16, 0xF3, 0xFE, 1, 2, 3])
        #expect(AdvertisingData.serviceData(data, uuid: 0xFEF3) == [1, 2, 3])
        #expect(AdvertisingData.serviceData(data, uuid: 0xFEAA) == nil)
        let full = AdvertisingData.build(serviceUUID: 0xFEF3, serviceData: [UInt8](repeating: 9, count: 27), maxLength: 31)
        #expect(full.count == 31)
        #expect(throws: NearbyError.self) { try AdvertisingData.structures([5, 0x16, 1]) }
    }

    @Test func discoveryTrackerFindsAndLoses() throws {
        let serviceID = "com.example.ble"
        let hash = ServiceIDHash.advertisementHash(serviceID: serviceID)
        let token: [UInt8] = [1, 2]
        let fast = try BleMediumAdvertisement.fast(
            data: BleConnectionsAdvertisement.fast(pcp: .p2pPointToPoint, endpointID: EndpointID("ABCD"), endpointInfo: Array("hi".utf8)).encodedBytes,
            deviceToken: token)
        let regular = try BleMediumAdvertisement.regular(
            serviceIDHash: hash,
            data: BleConnectionsAdvertisement.regular(pcp: .p2pPointToPoint, serviceIDHash: hash, endpointID: EndpointID("WXYZ"), endpointInfo: [UInt8](repeating: 65, count: 40)).encodedBytes,
            deviceToken: token, psm: 0x0083)
        let a = BLEAddress(string: "C0:00:00:00:00:01")!
        let b = BLEAddress(string: "C0:00:00:00:00:02")!
        var tracker = BLEDiscoveryTracker(serviceID: serviceID, pcp: .p2pPointToPoint, lostTimeout: .seconds(12))
        let logger = BLETestEnvironment.logger("test")
        let r1 = AdvertisingReport(eventType: 1, isExtended: true, address: a, data: AdvertisingData.build(serviceUUID: 0xFEF3, serviceData: fast.encodedBytes), rssi: -50)
        let r2 = AdvertisingReport(eventType: 1, isExtended: true, address: b, data: AdvertisingData.build(serviceUUID: 0xFEF3, serviceData: regular.encodedBytes, maxLength: 251), rssi: -50)
        let first = tracker.observe(r1, now: .zero, logger: logger)
        #expect(first.count == 2)
        #expect(first.first == .startTimer(a, after: .seconds(12)))
        let found = try #require(first.last)
        #expect(found == .report(.found(DiscoveredEndpoint(
            endpointID: "ABCD", endpointInfo: Array("hi".utf8), medium: .ble, route: .ble(address: "C0:00:00:00:00:01", psm: nil)))))
        #expect(tracker.observe(r1, now: .seconds(1), logger: logger).isEmpty)  // duplicate report
        let second = tracker.observe(r2, now: .seconds(5), logger: logger)
        #expect(second.first == .startTimer(b, after: .seconds(12)))
        #expect(second.last == .report(.found(DiscoveredEndpoint(
            endpointID: "WXYZ", endpointInfo: [UInt8](repeating: 65, count: 40), medium: .ble,
            route: .ble(address: "C0:00:00:00:00:02", psm: 0x0083)))))
        #expect(tracker.timerFired(for: a, now: .seconds(12)) == [.startTimer(a, after: .seconds(1))])  // seen at 1 s
        #expect(tracker.timerFired(for: a, now: .seconds(13)) == [.report(.lost(endpointID: "ABCD", medium: .ble))])
        #expect(tracker.timerFired(for: b, now: .seconds(17)) == [.report(.lost(endpointID: "WXYZ", medium: .ble))])
        #expect(tracker.timerFired(for: b, now: .seconds(30)).isEmpty)  // already lost
        // Another service's regular advertisement, and garbage service data, are ignored.
        var other = BLEDiscoveryTracker(serviceID: "other", pcp: .p2pPointToPoint, lostTimeout: .seconds(12))
        #expect(other.observe(r2, now: .zero, logger: logger).isEmpty)
        let garbage = AdvertisingReport(eventType: 1, isExtended: true, address: a, data: AdvertisingData.build(serviceUUID: 0xFEF3, serviceData: [0xFF, 1]), rssi: 0)
        #expect(other.observe(garbage, now: .zero, logger: logger).isEmpty)
    }
}
