import NearbyWire

/// The BLE socket layer and Weave: socket packets, Android L2CAP commands and length framing, Weave packets, and a
/// server socket machine and a server Weave connection fed fuzzer-chosen messages and packets. Decoded packets must
/// re-encode to bytes that decode equal (data packets and commands: to the same bytes); the machines must never
/// deliver after closing, and a Weave message must stay within its limit.
func fuzzBLESocket(_ input: FuzzInput) {
    var input = input
    switch input.byte() % 5 {
    case 0:
        let bytes = input.rest()
        guard let packet = try? BleSocketPacket(decoding: bytes) else { return }
        if case .data = packet { fuzzCheck(packet.encodedBytes == bytes, "data packet did not re-encode") }
        fuzzCheck((try? BleSocketPacket(decoding: packet.encodedBytes)) == packet, "socket packet did not round-trip")
    case 1:
        let bytes = input.rest()
        guard let command = try? BleL2CAPCommand(decoding: bytes) else { return }
        fuzzCheck(command.encodedBytes == bytes, "L2CAP command did not re-encode")
        var framing = BleL2CAPFraming()
        framing.append(BleL2CAPFraming.frame(bytes))
        fuzzCheck((try? framing.nextPacket()) == bytes, "framing did not round-trip")
    case 2:
        var framing = BleL2CAPFraming(maxLength: 4096)
        while !input.isAtEnd {
            framing.append(input.chunk8())
            do {
                while let packet = try framing.nextPacket() {
                    fuzzCheck(!packet.isEmpty && packet.count <= 4096, "framed packet outside 1…max")
                }
            } catch {
                return
            }
        }
    case 3:
        let bytes = input.rest()
        guard let packet = try? WeavePacket(decoding: bytes) else { return }
        // The reserved bits of a data header and anything after an error header are not kept.
        fuzzCheck((try? WeavePacket(decoding: packet.encodedBytes)) == packet, "Weave packet did not round-trip")
        if case .data = packet.kind { fuzzCheck(packet.encodedBytes.dropFirst() == bytes.dropFirst(), "Weave data changed") }
    default:
        let path: BleSocketMachine.Path = input.byte() & 1 == 0 ? .gatt : .l2cap
        let hash: [UInt8] = [1, 2, 3]
        var socket = BleSocketMachine.server(path: path, acceptedServiceIDHashes: [hash])
        _ = socket.start()
        var weave = WeaveConnection(role: .server, maxPacketSize: 20 + Int(input.byte()), maxMessageSize: 1024)
        while !input.isAtEnd {
            let packet = input.chunk8()
            for action in weave.receive(packet) {
                switch action {
                case .deliver(let message):
                    fuzzCheck(message.count <= 1024, "Weave message over its limit")
                    fuzzCheck(!weave.isClosed, "Weave delivered after closing")
                    let wasClosed = socket.isClosed
                    for socketAction in socket.receive(message) {
                        if case .deliver = socketAction { fuzzCheck(!wasClosed && socket.isEstablished, "data outside an established socket") }
                    }
                case .send(let bytes):
                    fuzzCheck(bytes.count <= max(20, weave.packetSize), "Weave packet over the packet size")
                default:
                    break
                }
            }
        }
    }
}
