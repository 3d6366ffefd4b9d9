import NearbyBLE

/// ATT PDUs and the GATT server: a decoded PDU re-encodes to bytes that decode equal, and a GATT server serving the
/// Nearby 0xFEF3 service answers every request PDU with exactly one response or error that fits the ATT MTU.
func fuzzATT(_ input: FuzzInput) {
    var input = input
    if input.byte() & 1 == 0 {
        let bytes = input.rest()
        guard let pdu = try? ATTPDU(decoding: bytes) else { return }
        fuzzCheck((try? ATTPDU(decoding: pdu.encodedBytes)) == pdu, "ATT PDU did not round-trip")
        return
    }
    let database = GATTDatabase(services: WeaveGATTService.services(slots: [Array(repeating: 0x48, count: 60)]))
    var server = GATTServer(database: database)
    while !input.isAtEnd {
        let bytes = input.chunk8()
        guard let pdu = try? ATTPDU(decoding: bytes) else { continue }
        let actions = server.receive(pdu)
        let sent = actions.compactMap { if case .send(let answer) = $0 { answer } else { nil } }
        for answer in sent {
            fuzzCheck(answer.encodedBytes.count <= max(server.mtu, 3), "answer over the ATT MTU")
        }
        if ATTPDU.isRequest(pdu.opcode) {
            let written = actions.contains { if case .written(_, _, true) = $0 { true } else { false } }
            fuzzCheck(sent.count == 1 || (sent.isEmpty && written), "a request got \(sent.count) answers")
        }
    }
}
