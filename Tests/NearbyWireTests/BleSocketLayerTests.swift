import NearbyTestSupport
import NearbyWire
import Testing

/// Golden bytes of the BLE socket layer, derived by hand from `ble_frames.proto`'s field numbers and the protobuf
/// wire format (the C++ and Apple writers serialize fields in number order, as SwiftProtobuf does).
@Suite("BLE socket layer: packets, L2CAP commands and framing", .timeLimit(.minutes(1)))
struct BleSocketLayerTests {
    let hash: [UInt8] = [0xAA, 0xBB, 0xCC]

    @Test("service-ID hash is SHA-256's first 3 bytes (computed with Python's hashlib)")
    func serviceIDHash() {
        #expect(BleSocketPacket.serviceIDHash("com.example.chat") == Hex.decodeOrEmpty("65d03e"))
        #expect(BleSocketPacket.serviceIDHash("NearbySharing") == Hex.decodeOrEmpty("fc9f5e"))
    }

    @Test("introduction: 00 00 00 ‖ {type 1, introduction {hash, socket version 2}}")
    func introduction() throws {
        let bytes = BleSocketPacket.introduction(serviceIDHash: hash).encodedBytes
        #expect(Hex.encode(bytes) == "000000080112070a03aabbcc1002")
        #expect(try BleSocketPacket(decoding: bytes) == .introduction(serviceIDHash: hash))
    }

    @Test("disconnection and acknowledgement")
    func disconnectionAndAck() throws {
        let disconnection = BleSocketPacket.disconnection(serviceIDHash: hash).encodedBytes
        #expect(Hex.encode(disconnection) == "00000008021a050a03aabbcc")
        #expect(try BleSocketPacket(decoding: disconnection) == .disconnection(serviceIDHash: hash))
        let ack = BleSocketPacket.acknowledgement(serviceIDHash: hash, receivedSize: 300).encodedBytes
        #expect(Hex.encode(ack) == "00000008032208" + "0a03aabbcc10ac02")
        #expect(try BleSocketPacket(decoding: ack) == .acknowledgement(serviceIDHash: hash, receivedSize: 300))
    }

    @Test("data packets are the hash then the bytes")
    func data() throws {
        let bytes = BleSocketPacket.data(serviceIDHash: hash, payload: [0, 0, 0, 2, 9, 9]).encodedBytes
        #expect(Hex.encode(bytes) == "aabbcc000000020909")
        #expect(try BleSocketPacket(decoding: bytes) == .data(serviceIDHash: hash, payload: [0, 0, 0, 2, 9, 9]))
        #expect(try BleSocketPacket(decoding: hash) == .data(serviceIDHash: hash, payload: []))
    }

    @Test("hostile packets are clear errors", arguments: [
        "", "aabb",  // shorter than the hash
        "000000ff",  // not a protobuf
        "0000000801",  // introduction without its frame
        "000000080112070a03aabbcc1001",  // socket version 1
        "000000080112060a02aabb1002",  // a 2-byte hash
        "0000000804",  // unknown type
        "0000000802",  // disconnection without its frame
        "0000000803",  // acknowledgement without its frame
    ])
    func hostile(_ hex: String) {
        _ = decodeOrNearbyError([.malformedBLESocketPacket], report: { Issue.record(Comment(rawValue: $0)) }) {
            try BleSocketPacket(decoding: Hex.decodeOrEmpty(hex))
        }
    }

    @Test("L2CAP commands: REQUEST_DATA_CONNECTION 03, READY 17, with data as [cmd][u16 BE length][data]")
    func commands() throws {
        #expect(BleL2CAPCommand(.requestDataConnection).encodedBytes == [0x03])
        #expect(BleL2CAPCommand(.responseDataConnectionReady).encodedBytes == [0x17])
        #expect(BleL2CAPCommand(.requestAdvertisement, data: hash).encodedBytes == [0x01, 0x00, 0x03] + hash)
        #expect(try BleL2CAPCommand(decoding: [0x17]) == BleL2CAPCommand(.responseDataConnectionReady))
        #expect(try BleL2CAPCommand(decoding: [0x15, 0x00, 0x02, 7, 8]) == BleL2CAPCommand(.responseAdvertisement, data: [7, 8]))
        for bad: [UInt8] in [[], [0x04], [0x01, 0x00], [0x01, 0x00, 0x05, 1]] {
            #expect(throws: NearbyError.self) { try BleL2CAPCommand(decoding: bad) }
        }
    }

    @Test("Android L2CAP framing: [u32 BE length][packet], read from any split of the stream")
    func framing() throws {
        #expect(BleL2CAPFraming.frame([0x03]) == [0, 0, 0, 1, 0x03])
        let stream = BleL2CAPFraming.frame([0x17]) + BleL2CAPFraming.frame(Array(repeating: 5, count: 300))
        for cut in [1, 2, 4, 5, 6, 100, stream.count] {
            var reader = BleL2CAPFraming()
            var packets: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                let end = min(stream.count, offset + cut)
                reader.append(Array(stream[offset..<end]))
                offset = end
                while let packet = try reader.nextPacket() { packets.append(packet) }
            }
            #expect(packets == [[0x17], Array(repeating: 5, count: 300)])
            #expect(reader.isAtPacketBoundary)
        }
        var zero = BleL2CAPFraming()
        zero.append([0, 0, 0, 0])
        #expect(throws: NearbyError.self) { try zero.nextPacket() }
        var huge = BleL2CAPFraming(maxLength: 1000)
        huge.append([0, 0, 0x03, 0xE9])
        #expect(throws: NearbyError.self) { try huge.nextPacket() }
    }
}

@Suite("BLE socket machine", .timeLimit(.minutes(1)))
struct BleSocketMachineTests {
    let hash = BleSocketPacket.serviceIDHash("com.example.chat")

    private func sends(_ actions: [BleSocketMachine.Action]) -> [[UInt8]] {
        actions.compactMap { if case .send(let m) = $0 { m } else { nil } }
    }

    private func delivered(_ actions: [BleSocketMachine.Action]) -> [UInt8] {
        actions.flatMap { action -> [UInt8] in if case .deliver(let m) = action { m } else { [] } }
    }

    @Test("L2CAP: request 03, ready 17, introduction, data with acknowledgements, disconnection")
    func l2capBothSides() throws {
        var client = BleSocketMachine.client(path: .l2cap, serviceIDHash: hash)
        var server = BleSocketMachine.server(path: .l2cap, acceptedServiceIDHashes: [hash])
        #expect(server.start().isEmpty)
        let request = sends(client.start())
        #expect(request == [[0x03]])
        let ready = sends(server.receive(request[0]))
        #expect(ready == [[0x17]])
        let intro = client.receive(ready[0])
        #expect(client.isEstablished)
        #expect(sends(intro) == [BleSocketPacket.introduction(serviceIDHash: hash).encodedBytes])
        let accepted = server.receive(sends(intro)[0])
        #expect(server.isEstablished)
        guard case .established(let accepted) = accepted.first else { Issue.record("not established"); return }
        #expect(accepted == hash)

        let data = client.dataMessage([0, 0, 0, 1, 42])
        #expect(data == hash + [0, 0, 0, 1, 42])
        let received = server.receive(data)
        #expect(delivered(received) == [0, 0, 0, 1, 42])
        #expect(sends(received) == [BleSocketPacket.acknowledgement(serviceIDHash: hash, receivedSize: 8).encodedBytes])
        #expect(client.receive(sends(received)[0]).isEmpty)  // acknowledgements are only noted

        let goodbye = sends(client.disconnect())
        #expect(goodbye == [BleSocketPacket.disconnection(serviceIDHash: hash).encodedBytes])
        guard case .disconnected = server.receive(goodbye[0]).first else { Issue.record("no disconnection"); return }
        #expect(server.isClosed)
    }

    @Test("GATT: the client introduces itself at once, no acknowledgements")
    func gatt() {
        var client = BleSocketMachine.client(path: .gatt, serviceIDHash: hash)
        var server = BleSocketMachine.server(path: .gatt, acceptedServiceIDHashes: [hash])
        _ = server.start()
        let intro = sends(client.start())
        #expect(intro == [BleSocketPacket.introduction(serviceIDHash: hash).encodedBytes])
        _ = server.receive(intro[0])
        let received = server.receive(client.dataMessage([1, 2, 3]))
        #expect(sends(received).isEmpty)
        #expect(delivered(received) == [1, 2, 3])
    }

    @Test("the server answers an advertisement request with an empty advertisement and takes an introduction without the command")
    func serverLeniency() {
        var server = BleSocketMachine.server(path: .l2cap, acceptedServiceIDHashes: [hash])
        _ = server.start()
        #expect(sends(server.receive([0x01, 0x00, 0x03] + hash)) == [[0x15]])
        _ = server.receive(BleSocketPacket.introduction(serviceIDHash: hash).encodedBytes)
        #expect(server.isEstablished)
    }

    @Test("protocol errors fail the socket", arguments: [0, 1, 2])
    func protocolErrors(_ which: Int) {
        var server = BleSocketMachine.server(path: .gatt, acceptedServiceIDHashes: [hash])
        _ = server.start()
        let actions: [BleSocketMachine.Action]
        switch which {
        case 0: actions = server.receive(hash + [1, 2])  // data before the introduction
        case 1: actions = server.receive(BleSocketPacket.introduction(serviceIDHash: [1, 2, 3]).encodedBytes)  // another service
        default:
            _ = server.receive(BleSocketPacket.introduction(serviceIDHash: hash).encodedBytes)
            actions = server.receive([9, 9, 9, 1])  // data for another service
        }
        guard case .fail(let error) = actions.last else { Issue.record("expected a failure, got \(actions)"); return }
        #expect(error.code == .malformedBLESocketPacket)
        #expect(server.isClosed)
    }
}

extension Hex {
    /// Test helper: decodes literal hex, empty on a typo (which then fails the comparison).
    static func decodeOrEmpty(_ text: String) -> [UInt8] { (try? decode(text)) ?? [] }
}

