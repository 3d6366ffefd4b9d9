import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBLE

/// ATT PDUs against the byte layouts of Bluetooth Core Vol 3 Part F §3.4, and the GATT server machine on the
/// Nearby 0xFEF3 service (Weave characteristics and an advertisement slot).
@Suite("ATT PDUs and the GATT server and client machines", .timeLimit(.minutes(1)))
struct ATTGATTTests {
    @Test("UUIDs: 16-bit and 128-bit forms, the Nearby types")
    func uuids() {
        #expect(BLEUUID(0xFEF3).description == "0000FEF3-0000-1000-8000-00805F9B34FB")
        #expect(BLEUUID(0xFEF3).attBytes == [0xF3, 0xFE])
        #expect(NearbyGATTUUIDs.weaveClientToServer.short == nil)
        #expect(NearbyGATTUUIDs.weaveClientToServer.description == "00000100-0004-1000-8000-001A11000101")
        #expect(Hex.encode(NearbyGATTUUIDs.weaveServerToClient.attBytes) == "020100111a0000800010040000010000")
        #expect(NearbyGATTUUIDs.advertisementSlot(3).description == "00000000-0000-3000-8000-000000000003")
        #expect(BLEUUID(attBytes: NearbyGATTUUIDs.weaveClientToServer.attBytes) == NearbyGATTUUIDs.weaveClientToServer)
    }

    @Test("PDU golden bytes and round trips")
    func pdus() throws {
        let cases: [(ATTPDU, String)] = [
            (.exchangeMTURequest(mtu: 517), "020502"),
            (.exchangeMTUResponse(mtu: 23), "031700"),
            (.errorResponse(requestOpcode: 0x08, handle: 0x0004, error: 0x0A), "010804000a"),
            (.findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: [0xF3, 0xFE]), "060100ffff0028f3fe"),
            (.findByTypeValueResponse([(1, 8)]), "0701000800"),
            (.readByTypeRequest(start: 1, end: 8, type: .characteristic), "08010008000328"),
            (.readByTypeResponse([(2, [0x08, 0x03, 0x00, 0xF3, 0xFE])]), "09070200080300f3fe"),
            (.findInformationRequest(start: 5, end: 8), "0405000800"),
            (.findInformationResponse([(6, .clientCharacteristicConfiguration)]), "0501060002" + "29"),
            (.readRequest(handle: 3), "0a0300"),
            (.readResponse([1, 2]), "0b0102"),
            (.readBlobRequest(handle: 3, offset: 22), "0c03001600"),
            (.writeRequest(handle: 3, value: [0x80]), "12030080"),
            (.writeResponse, "13"),
            (.indication(handle: 5, value: [0x1C]), "1d05001c"),
            (.confirmation, "1e"),
            (.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService), "100100ffff0028"),
            (.readByGroupTypeResponse([(1, 8, [0xF3, 0xFE])]), "1106010008" + "00f3fe"),
        ]
        for (pdu, hex) in cases {
            #expect(Hex.encode(pdu.encodedBytes) == hex, "\(pdu)")
            #expect(try ATTPDU(decoding: pdu.encodedBytes) == pdu)
        }
        for bad in ["", "02", "0505", "0700", "0902", "09030100", "080100ff"] {
            #expect(throws: NearbyError.self) { try ATTPDU(decoding: ((try? Hex.decode(bad)) ?? [])) }
        }
    }

    private func database(slot: [UInt8] = Array(repeating: 0xAB, count: 40)) -> GATTDatabase {
        GATTDatabase(services: WeaveGATTService.services(slots: [slot]))
    }

    private func sent(_ actions: [GATTServer.Action]) -> [ATTPDU] {
        actions.compactMap { if case .send(let pdu) = $0 { pdu } else { nil } }
    }

    @Test("the attribute table: service, Weave write and indicate (+CCCD), a slot")
    func table() {
        let db = database()
        #expect(db.attributes.map(\.handle) == Array(1...8))
        #expect(db.valueHandle(of: NearbyGATTUUIDs.weaveClientToServer) == 3)
        #expect(db.valueHandle(of: NearbyGATTUUIDs.weaveServerToClient) == 5)
        #expect(db.attributes[5].type == .clientCharacteristicConfiguration)
        #expect(db.valueHandle(of: NearbyGATTUUIDs.advertisementSlot(0)) == 8)
        guard case .service(let end) = db.attributes[0].role else { Issue.record("no service"); return }
        #expect(end == 8)
    }

    @Test("discovery, a long read, CCCD and a write, answered as a client expects")
    func serverConversation() throws {
        var server = GATTServer(database: database())
        #expect(sent(server.receive(.exchangeMTURequest(mtu: 23))) == [.exchangeMTUResponse(mtu: 517)])
        #expect(server.mtu == 23)
        #expect(sent(server.receive(.findByTypeValueRequest(start: 1, end: 0xFFFF, type: 0x2800, value: [0xF3, 0xFE])))
            == [.findByTypeValueResponse([(1, 8)])])
        #expect(sent(server.receive(.readByGroupTypeRequest(start: 1, end: 0xFFFF, type: .primaryService)))
            == [.readByGroupTypeResponse([(1, 8, [0xF3, 0xFE])])])
        // Characteristic declarations: 19 bytes each, one per response at MTU 23.
        let first = sent(server.receive(.readByTypeRequest(start: 1, end: 8, type: .characteristic)))
        #expect(first == [.readByTypeResponse([(2, [0x08, 3, 0] + NearbyGATTUUIDs.weaveClientToServer.attBytes)])])
        #expect(sent(server.receive(.readByTypeRequest(start: 9, end: 0xFFFF, type: .characteristic)))
            == [.errorResponse(requestOpcode: 0x08, handle: 9, error: ATTPDU.ErrorCode.attributeNotFound)])
        #expect(sent(server.receive(.findInformationRequest(start: 6, end: 6))) == [.findInformationResponse([(6, .clientCharacteristicConfiguration)])])
        // A 40-byte slot: 22 bytes, then the rest by Read Blob.
        #expect(sent(server.receive(.readRequest(handle: 8))) == [.readResponse(Array(repeating: 0xAB, count: 22))])
        #expect(sent(server.receive(.readBlobRequest(handle: 8, offset: 22))) == [.readBlobResponse(Array(repeating: 0xAB, count: 18))])
        #expect(sent(server.receive(.readBlobRequest(handle: 8, offset: 41))) == [.errorResponse(requestOpcode: 0x0C, handle: 8, error: ATTPDU.ErrorCode.invalidOffset)])
        // The Weave write characteristic is not readable; the indicate one needs its CCCD.
        #expect(sent(server.receive(.readRequest(handle: 3))) == [.errorResponse(requestOpcode: 0x0A, handle: 3, error: ATTPDU.ErrorCode.readNotPermitted)])
        #expect(!server.indicationsEnabled(valueHandle: 5))
        let subscribe = server.receive(.writeRequest(handle: 6, value: [0x02, 0x00]))
        #expect(sent(subscribe) == [.writeResponse])
        #expect(server.indicationsEnabled(valueHandle: 5))
        // A Weave packet: handed over, answered later.
        let write = server.receive(.writeRequest(handle: 3, value: [0x80, 0, 1, 0, 1, 0, 0]))
        #expect(sent(write).isEmpty)
        guard case .written(let uuid, let value, true) = write.first else { Issue.record("not written: \(write)"); return }
        #expect(uuid == NearbyGATTUUIDs.weaveClientToServer && value.count == 7)
        #expect(sent(server.receive(.writeRequest(handle: 8, value: [1]))) == [.errorResponse(requestOpcode: 0x12, handle: 8, error: ATTPDU.ErrorCode.writeNotPermitted)])
        #expect(sent(server.receive(.writeRequest(handle: 99, value: [1]))) == [.errorResponse(requestOpcode: 0x12, handle: 99, error: ATTPDU.ErrorCode.invalidHandle)])
        #expect(sent(server.receive(.other(opcode: 0x16, parameters: [1, 0, 0, 0]))) == [.errorResponse(requestOpcode: 0x16, handle: 0, error: ATTPDU.ErrorCode.requestNotSupported)])
        guard case .confirmed = server.receive(.confirmation).first else { Issue.record("no confirmation"); return }
    }

    @Test("the client queue sends one request at a time and matches answers")
    func clientQueue() {
        var queue = ATTClientQueue(timeout: .seconds(30))
        let (first, a1) = queue.submit(.readRequest(handle: 3))
        let (second, a2) = queue.submit(.readRequest(handle: 8))
        #expect(a1.count == 2)  // send + timer
        #expect(a2.isEmpty)
        let done = queue.receive(.readResponse([1]))
        var completed: [Int] = []
        var sentNext = false
        for action in done {
            if case .complete(let id, _) = action { completed.append(id) }
            if case .send(.readRequest(handle: 8)) = action { sentNext = true }
        }
        #expect(completed == [first] && sentNext)
        let failed = queue.receive(.errorResponse(requestOpcode: 0x0A, handle: 8, error: 0x0A))
        #expect(failed.contains { if case .fail(second, let e) = $0 { e.code == .gattRequestFailed } else { false } })
        let (third, _) = queue.submit(.readRequest(handle: 1))
        let timedOut = queue.timedOut(third)
        #expect(timedOut.contains { if case .fail(third, let e) = $0 { e.code == .timeout } else { false } })
        let (fourth, after) = queue.submit(.readRequest(handle: 1))
        #expect(after.contains { if case .fail(fourth, _) = $0 { true } else { false } }, "the bearer stays failed after a timeout")
        // Indications are passed on for the caller to confirm.
        #expect(queue.receive(.indication(handle: 5, value: [7])).contains { if case .value(5, [7], true) = $0 { true } else { false } })
    }
}
