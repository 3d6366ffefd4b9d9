import NearbyBLE

/// What a (possibly hostile or broken) controller sends the host: an H4 byte stream cut at fuzzer-chosen places,
/// its events decoded, and its ACL packets reassembled into L2CAP PDUs whose signalling commands are decoded.
func fuzzHCI(_ input: FuzzInput) {
    var input = input
    let pieceSize = Int(input.byte() % 32) + 1
    let stream = input.rest()
    var deframer = H4Deframer()
    var reassemblers: [UInt16: L2CAPReassembler] = [:]
    var offset = 0
    while offset < stream.count {
        let end = min(stream.count, offset + pieceSize)
        deframer.append(stream[offset..<end])
        offset = end
        while true {
            let packet: H4Packet?
            do {
                packet = try deframer.next()
            } catch {
                return  // a broken stream ends the transport
            }
            guard let packet else { break }
            handle(packet, &reassemblers)
        }
    }
}

private func handle(_ packet: H4Packet, _ reassemblers: inout [UInt16: L2CAPReassembler]) {
    switch packet {
    case .event(let body):
        guard let event = try? HCIEvent(decoding: body) else { return }
        if case .leAdvertisingReports(let reports) = event {
            for report in reports { _ = try? AdvertisingData.structures(report.data) }
        }
    case .acl(let body):
        guard let acl = try? ACLPacket(decoding: body) else { return }
        fuzzCheck(ACLPacket(handle: acl.handle, boundary: acl.boundary, data: acl.data).encoded == body
            || body[1] & 0xC0 != 0, "ACL packet did not re-encode")
        var reassembler = reassemblers[acl.handle] ?? L2CAPReassembler()
        let pdu = try? reassembler.append(acl)
        reassemblers[acl.handle] = reassembler
        guard let pdu, let frame = try? L2CAPFrame.decode(pdu) else { return }
        fuzzCheck(L2CAPFrame.encode(cid: frame.cid, payload: frame.payload) == pdu, "L2CAP frame did not re-encode")
        if frame.cid == L2CAPConstants.leSignalingCID {
            decodeSignal(frame.payload)
        }
    case .command, .sco, .iso:
        break
    }
}

/// Decodes one LE signalling command; a decoded command encodes back to the same bytes.
func decodeSignal(_ bytes: [UInt8]) {
    guard let signal = try? L2CAPSignal(decoding: bytes) else { return }
    fuzzCheck(signal.encoded == bytes, "L2CAP signal did not re-encode")
}
