import NearbyWire
import Testing

import NearbyBLE

@Suite("HCI and H4 encoding", .timeLimit(.minutes(5)))
struct HCICodecTests {
    func hex(_ text: String) -> [UInt8] {
        let digits = text.filter { !$0.isWhitespace }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            bytes.append(UInt8(digits[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    @Test func resetCommandBytes() {
        #expect(H4Packet.command(HCICommand(.reset).encoded).encoded == hex("01 03 0c 00"))
    }

    @Test func commandEncodings() {
        let address = BLEAddress(string: "C0:00:00:00:00:0A")!
        #expect(HCICommand.leSetRandomAddress(address).encoded == hex("05 20 06 0a 00 00 00 00 c0"))
        #expect(HCICommand.leSetScanEnable(true).encoded == hex("0c 20 02 01 00"))
        #expect(HCICommand.disconnect(handle: 1).encoded == hex("06 04 03 01 00 13"))
        let create = HCICommand.leCreateConnection(to: address).encoded
        #expect(create.count == 3 + 25)
        #expect(Array(create[0..<3]) == hex("0d 20 19"))
        #expect(Array(create[8..<15]) == hex("01 0a 00 00 00 00 c0"))
        #expect(create[15] == 0x01)  // own address type random
        #expect(HCICommand.leSetExtendedAdvertisingParameters(handle: 1, interval: 160).encoded.count == 3 + 25)
        #expect(HCICommand.leSetAdvertisingData([1, 2, 3]).parameters.count == 32)
        #expect(HCIOpcode.leSetExtendedScanEnable.rawValue == 0x2042)
    }

    @Test func decodesCommandCompleteAndStatus() throws {
        let complete = try HCIEvent(decoding: hex("0e 04 01 03 0c 00"))
        #expect(complete == .commandComplete(numCommands: 1, opcode: .reset, returnParameters: [0]))
        let status = try HCIEvent(decoding: hex("0f 04 00 01 0d 20"))
        #expect(status == .commandStatus(status: 0, numCommands: 1, opcode: .leCreateConnection))
        let buffer = try HCIEvent(decoding: hex("0e 07 01 02 20 00 1b 00 40"))
        #expect(buffer == .commandComplete(numCommands: 1, opcode: .leReadBufferSize, returnParameters: hex("00 1b 00 40")))
    }

    @Test func decodesConnectionCompleteFromTheEmulator() throws {
        let event = try HCIEvent(decoding: hex("3e 13 01 00 01 00 00 01 0a 00 00 00 00 c0 18 00 00 00 48 00 00"))
        guard case .leConnectionComplete(let complete) = event else {
            Issue.record("not a connection complete: \(event)")
            return
        }
        #expect(complete.status == 0)
        #expect(complete.handle == 1)
        #expect(complete.isCentral)
        #expect(complete.peer == BLEAddress(string: "C0:00:00:00:00:0A"))
    }

    @Test func decodesEnhancedConnectionComplete() throws {
        var bytes = hex("3e 1f 0a 00 02 00 01 01 0a 00 00 00 00 c0")
        bytes += [UInt8](repeating: 0, count: 12) + hex("18 00 00 00 48 00 00")
        let event = try HCIEvent(decoding: bytes)
        guard case .leConnectionComplete(let complete) = event else {
            Issue.record("not a connection complete: \(event)")
            return
        }
        #expect(complete.handle == 2)
        #expect(!complete.isCentral)
    }

    @Test func decodesExtendedAdvertisingReportFromTheEmulator() throws {
        let data = hex("0201060303f3fe0c16f3fe2a0102030405060708") + [UInt8](repeating: 0, count: 11)
        let bytes = hex("3e 39 0d 01 01 00 01 0d 00 00 00 00 c0 01 01 00 00 ce 00 00 00 00 00 00 00 00 00 1f") + data
        let event = try HCIEvent(decoding: bytes)
        guard case .leAdvertisingReports(let reports) = event, let report = reports.first else {
            Issue.record("not a report: \(event)")
            return
        }
        #expect(report.isExtended)
        #expect(report.address == BLEAddress(string: "C0:00:00:00:00:0D"))
        #expect(report.rssi == -50)
        #expect(report.data == data)
        #expect(AdvertisingData.serviceData(report.data, uuid: 0xFEF3) == hex("2a0102030405060708"))
    }

    @Test func decodesLegacyAdvertisingReport() throws {
        let bytes = hex("3e 11 02 01 00 01 0a 00 00 00 00 c0 05 04 16 f3 fe 2a c4")
        let event = try HCIEvent(decoding: bytes)
        guard case .leAdvertisingReports(let reports) = event, let report = reports.first else {
            Issue.record("not a report: \(event)")
            return
        }
        #expect(!report.isExtended)
        #expect(report.data == hex("04 16 f3 fe 2a"))
        #expect(report.rssi == -60)
    }

    @Test func decodesNumberOfCompletedPackets() throws {
        let event = try HCIEvent(decoding: hex("13 05 01 01 00 03 00"))
        guard case .numberOfCompletedPackets(let entries) = event else {
            Issue.record("\(event)")
            return
        }
        #expect(entries.count == 1 && entries[0].handle == 1 && entries[0].count == 3)
    }

    @Test func rejectsMalformedEvents() {
        let malformed: [[UInt8]] = [
            [],
            [0x0e],
            hex("0e 05 01 03 0c 00"),  // length says 5, has 4
            hex("0e 01 01"),  // command complete without opcode
            hex("0f 02 00 01"),
            hex("13 05 02 01 00 03 00"),  // two handles announced, one present
            hex("05 02 00 01"),
            hex("3e 05 01 00 01 00 00"),  // truncated connection complete
            hex("3e 04 0d 01 01 00"),  // truncated extended report
            hex("3e 05 02 01 00 01 0a"),  // truncated legacy report
            hex("3e 02 02 00"),  // zero reports
            hex("3e 0e 02 01 00 01 0a 00 00 00 00 c0 ff 00 00 00"),  // data length 255
        ]
        for bytes in malformed {
            #expect(throws: NearbyError.self, "\(bytes)") { try HCIEvent(decoding: bytes) }
        }
    }

    @Test func randomEventBytesNeverCrash() {
        var generator = SplitMix(seed: 7)
        for _ in 0..<20_000 {
            let length = Int(generator.next() % 64)
            var bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            if bytes.count >= 2, generator.next() % 2 == 0 { bytes[1] = UInt8(bytes.count - 2) }
            if bytes.count >= 3, generator.next() % 2 == 0 {
                bytes[0] = 0x3E
                bytes[2] = [0x01, 0x02, 0x0A, 0x0D][Int(generator.next() % 4)]
            }
            _ = try? HCIEvent(decoding: bytes)
            _ = try? ACLPacket(decoding: bytes)
            _ = try? L2CAPSignal(decoding: bytes)
            var deframer = H4Deframer()
            deframer.append(bytes)
            while let packet = try? deframer.next() { _ = packet }
        }
    }

    @Test func deframerSplitsPacketsFedByteByByte() throws {
        let big = [UInt8](repeating: 0xAB, count: 3000)
        var acl = ACLPacket(handle: 1, boundary: .firstFlushable, data: big).encoded
        acl = [0x02] + acl
        let stream = hex("04 0e 04 01 03 0c 00") + acl + hex("04 13 05 01 01 00 01 00")
        var deframer = H4Deframer()
        var packets: [H4Packet] = []
        for byte in stream {
            deframer.append([byte])
            while let packet = try deframer.next() { packets.append(packet) }
        }
        #expect(packets.count == 3)
        #expect(packets[0] == .event(hex("0e 04 01 03 0c 00")))
        if case .acl(let body) = packets[1] {
            let decoded = try ACLPacket(decoding: body)
            #expect(decoded.data == big)
            #expect(decoded.boundary == .firstFlushable)
        } else {
            Issue.record("second packet is not ACL")
        }
        #expect(deframer.bufferedByteCount == 0)
    }

    @Test func deframerRejectsUnknownIndicator() {
        var deframer = H4Deframer()
        deframer.append([0x09, 0x00])
        #expect(throws: NearbyError.self) { try deframer.next() }
    }

    @Test func transportSpecParsing() throws {
        #expect(try HCITransportSpec(parsing: "tcp:127.0.0.1:9001") == .tcp(host: "127.0.0.1", port: 9001))
        #expect(try HCITransportSpec(parsing: "tcp:[::1]:9001") == .tcp(host: "::1", port: 9001))
        #expect(try HCITransportSpec(parsing: "uart:/dev/ttyUSB0@1000000") == .uart(path: "/dev/ttyUSB0", baudRate: 1_000_000))
        #expect(try HCITransportSpec(parsing: "uart:/dev/ttyS1") == .uart(path: "/dev/ttyS1", baudRate: 115_200))
        #expect(try HCITransportSpec(parsing: "hci:0") == .hciUserChannel(index: 0))
        for bad in ["", "tcp:host", "tcp::9", "tcp:h:0", "uart:ttyS0", "uart:/dev/x@fast", "hci:x", "usb:0"] {
            #expect(throws: NearbyError.self, "\(bad)") { try HCITransportSpec(parsing: bad) }
        }
    }

    @Test func userChannelWithoutKernelBluetoothFailsClearly() {
        do {
            let transport = try HCITransportFactory.open(.hciUserChannel(index: 0))
            transport.close()  // a kernel with Bluetooth and an hci0: nothing to check here
        } catch let error as NearbyError {
            #expect(error.code == .mediumUnavailable)
            #expect(error.message.contains("hci:0"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func tcpTransportToAClosedPortFailsClearly() {
        #expect(throws: NearbyError.self) { try HCITransportFactory.open(.tcp(host: "127.0.0.1", port: 1)) }
    }

    @Test func addressFormatting() {
        let address = BLEAddress(string: "C0:01:02:03:04:0A")!
        #expect(address.bytes == [0x0A, 0x04, 0x03, 0x02, 0x01, 0xC0])
        #expect(address.description == "C0:01:02:03:04:0A")
        #expect(BLEAddress(string: "00:01:02:03:04:05/public")?.kind == .public)
        #expect(BLEAddress.staticRandom().bytes[5] & 0xC0 == 0xC0)
        #expect(BLEAddress(string: "C0:01:02:03:04") == nil)
    }
}

/// A tiny deterministic generator for fuzz loops.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
