import Foundation
import Testing

@testable import NearbyMessages

@Suite(.timeLimit(.minutes(5))) struct BeaconDecoderTests {
    private func decodeOne(_ text: String) throws -> BeaconFrame {
        let frames = BeaconDecoder.decode(hex(text))
        #expect(frames.count == 1, "\(frames)")
        return try #require(frames.first)
    }

    @Test("Eddystone-UID, with and without RFU bytes and without the UUID list", arguments: [
        BeaconVectors.uidFull, BeaconVectors.uidLegacy, BeaconVectors.uidNoList,
    ])
    func uid(_ vector: String) throws {
        let frame = try decodeOne(vector)
        #expect(frame == .eddystoneUID(namespace: hex("00112233445566778899"), instance: hex("AABBCCDDEEFF"), txPower: -18))
        #expect(frame.message == Message(
            content: Data(hex("00112233445566778899AABBCCDDEEFF")), namespace: "__reserved_namespace", type: "__eddystone_uid"))
        #expect(frame.referenceRSSIAt1m == -59)
        #expect(frame.kind == "eddystone-uid")
    }

    @Test("iBeacon: UUID in string order, big-endian major and minor, measured power")
    func iBeacon() throws {
        let frame = try decodeOne(BeaconVectors.iBeacon)
        guard case .iBeacon(let uuid, let major, let minor, let power) = frame else {
            Issue.record("\(frame)")
            return
        }
        #expect(uuid.uuidString.lowercased() == "01122334-4556-6778-899a-abbccddeeff0")
        #expect(major == 1 && minor == 2 && power == -59)
        #expect(frame.message.type == "__i_beacon_id")
        #expect(frame.message.content == Data(hex("0112233445566778899AABBCCDDEEFF0 0001 0002")))
    }

    @Test("Eddystone-URL schemes and expansions", arguments: [
        (BeaconVectors.urlExample, "https://example.com/", -21),
        (BeaconVectors.urlGooGl, "http://www.goo.gl/x", -12),
        (BeaconVectors.urlGoogle, "https://www.google.com", -21),
    ])
    func url(_ vector: (String, String, Int)) throws {
        #expect(try decodeOne(vector.0) == .eddystoneURL(url: vector.1, txPower: vector.2))
    }

    @Test("every expansion code expands")
    func expansions() {
        let expected = [".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/", ".com", ".org", ".edu", ".net",
            ".info", ".biz", ".gov"]
        for (code, text) in expected.enumerated() {
            #expect(BeaconDecoder.expandURL(scheme: 2, [0x61, UInt8(code)]) == "http://a" + text)
        }
    }

    @Test("TLM: millivolts, signed 8.8 temperature, counters, uptime in 0.1 s units")
    func tlm() throws {
        guard case .eddystoneTLM(let telemetry) = try decodeOne(BeaconVectors.tlmPlain) else {
            Issue.record("not TLM")
            return
        }
        #expect(telemetry.batteryMillivolts == 3000)
        #expect(telemetry.temperatureCelsius == 23.5)
        #expect(telemetry.advertisingCount == 256)
        #expect(telemetry.uptimeTenths == 10000)
        #expect(telemetry.uptimeSeconds == 1000)
        guard case .eddystoneTLM(let negative) = try decodeOne(BeaconVectors.tlmNegative) else {
            Issue.record("not TLM"); return
        }
        #expect(negative.temperatureCelsius == -0.5)
        let unsupported = EddystoneTelemetry(batteryMillivolts: 0, rawTemperature: Int16.min, advertisingCount: 0, uptimeTenths: 0)
        #expect(unsupported.temperatureCelsius == nil)
    }

    @Test("encrypted TLM: big-endian salt and MIC")
    func encryptedTLM() throws {
        #expect(try decodeOne(BeaconVectors.tlmEncrypted)
            == .eddystoneEncryptedTLM(ciphertext: hex("0102030405060708090A0B0C"), salt: 0x1234, mic: 0x5678))
    }

    @Test("EID")
    func eid() throws {
        #expect(try decodeOne(BeaconVectors.eid) == .eddystoneEID(ephemeralID: hex("0123456789ABCDEF"), txPower: -16))
    }

    @Test("AltBeacon")
    func altBeacon() throws {
        let frame = try decodeOne(BeaconVectors.altBeacon)
        #expect(frame == .altBeacon(
            manufacturer: 0x0118, beaconID: Array(0..<20), referenceRSSI: -59, reserved: 0x42))
        #expect(frame.message.type == "__alt_beacon_id")
    }

    @Test("not beacons: reserved URL byte, unknown scheme, wrong iBeacon length, unknown frame type", arguments: [
        BeaconVectors.urlReserved, BeaconVectors.urlUnknownScheme, BeaconVectors.iBeaconWrongLength,
        BeaconVectors.unknownFrame, "", "02 01 06", "FF 16 AA FE", "05 16 AA FE 00 EE",
    ])
    func notBeacons(_ vector: String) {
        #expect(BeaconDecoder.decode(hex(vector)).isEmpty)
    }

    @Test("random advertising data never crashes the decoder")
    func randomData() {
        var generator = SystemRandomNumberGenerator()
        let seeds = [BeaconVectors.uidFull, BeaconVectors.iBeacon, BeaconVectors.tlmPlain, BeaconVectors.altBeacon].map(hex)
        for round in 0..<3000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<3 { bytes[Int.random(in: 0..<bytes.count, using: &generator)] = .random(in: 0...255, using: &generator) }
            bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &generator)))
            _ = BeaconDecoder.decode(bytes)
        }
    }

    @Test("distance: log-distance model with exponent 2 from the 1 m reference")
    func distance() {
        let iBeacon = Beacon(frame: try! decodeOneQuiet(BeaconVectors.iBeacon), address: "A", rssi: -65)
        #expect(abs(iBeacon.estimatedDistance! - 1.995) < 0.01)
        #expect(abs(BeaconDistance.estimate(rssi: -70, referenceAt1m: -59) - 3.548) < 0.01)
        #expect(abs(BeaconDistance.estimate(rssi: -80, referenceAt1m: -59) - 11.22) < 0.01)
        #expect(abs(BeaconDistance.estimate(rssi: -80, referenceAt1m: -59, exponent: 3) - 5.01) < 0.01)
        // Eddystone carries the 0 m power: −18 dBm at 0 m is −59 at 1 m.
        let uid = Beacon(frame: try! decodeOneQuiet(BeaconVectors.uidFull), address: "A", rssi: -59)
        #expect(abs(uid.estimatedDistance! - 1) < 0.001)
        let tlm = Beacon(frame: try! decodeOneQuiet(BeaconVectors.tlmPlain), address: "A", rssi: -59)
        #expect(tlm.estimatedDistance == nil)
    }

    private func decodeOneQuiet(_ text: String) throws -> BeaconFrame {
        try #require(BeaconDecoder.decode(hex(text)).first)
    }
}
