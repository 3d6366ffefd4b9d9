import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBLE

/// Seeded random and mutated bytes into every decoder and machine of the Android BLE formats (the same properties
/// as the `ble-socket` and `att` fuzz targets, run in the test suite): a decoder decodes or throws its
/// `NearbyError`, what it decodes round-trips, the Weave and socket machines and the GATT server never trap and
/// keep their limits.
@Suite("BLE socket layer, Weave and ATT under hostile input", .timeLimit(.minutes(1)))
struct BLESocketHostileInputTests {
    static let rounds = 3000

    static func seeds() -> [[UInt8]] {
        let hash: [UInt8] = [1, 2, 3]
        return [
            BleSocketPacket.introduction(serviceIDHash: hash).encodedBytes,
            BleSocketPacket.acknowledgement(serviceIDHash: hash, receivedSize: 300).encodedBytes,
            BleSocketPacket.disconnection(serviceIDHash: hash).encodedBytes,
            hash + [0, 0, 0, 2, 8, 1], [0x03], [0x17], [0x01, 0x00, 0x03] + hash,
            WeavePacket(counter: 0, .connectionRequest(minVersion: 1, maxVersion: 1, maxPacketSize: 0, data: [])).encodedBytes,
            WeavePacket(counter: 1, .data(isFirst: true, isLast: true, payload: hash + [9])).encodedBytes,
            ATTPDU.readByTypeRequest(start: 1, end: 0xFFFF, type: .characteristic).encodedBytes,
            ATTPDU.writeRequest(handle: 6, value: [2, 0]).encodedBytes,
            ATTPDU.readByTypeResponse([(2, [0x08, 3, 0, 0xF3, 0xFE])]).encodedBytes,
        ]
    }

    @Test("decoders decode or throw their error, and round-trip")
    func decoders() {
        var random = SeededGenerator(seed: 27)
        let seeds = Self.seeds()
        for round in 0..<Self.rounds {
            let bytes = round % 2 == 0 ? random.bytes(random.below(64)) : random.mutate(seeds[random.below(seeds.count)])
            let report: (String) -> Void = { Issue.record(Comment(rawValue: $0)) }
            if let packet = decodeOrNearbyError([.malformedBLESocketPacket], report: report, { try BleSocketPacket(decoding: bytes) }) {
                #expect((try? BleSocketPacket(decoding: packet.encodedBytes)) == packet)
            }
            if let command = decodeOrNearbyError([.malformedBLESocketPacket], report: report, { try BleL2CAPCommand(decoding: bytes) }) {
                #expect(command.encodedBytes == bytes)
            }
            if let packet = decodeOrNearbyError([.malformedBLESocketPacket], report: report, { try WeavePacket(decoding: bytes) }) {
                #expect((try? WeavePacket(decoding: packet.encodedBytes)) == packet)
            }
            if let pdu = decodeOrNearbyError([.malformedATTPDU], report: report, { try ATTPDU(decoding: bytes) }) {
                #expect((try? ATTPDU(decoding: pdu.encodedBytes)) == pdu)
            }
            var framing = BleL2CAPFraming(maxLength: 4096)
            framing.append(bytes)
            _ = decodeOrNearbyError([.malformedBLESocketPacket], report: report) {
                while let packet = try framing.nextPacket() { #expect(!packet.isEmpty && packet.count <= 4096) }
            }
        }
    }

    @Test("a server Weave connection and socket fed hostile packets keep their limits")
    func machines() {
        var random = SeededGenerator(seed: 28)
        let seeds = Self.seeds()
        for _ in 0..<300 {
            var weave = WeaveConnection(role: .server, maxPacketSize: 20 + random.below(600), maxMessageSize: 1024)
            var socket = BleSocketMachine.server(path: random.below(2) == 0 ? .gatt : .l2cap, acceptedServiceIDHashes: [[1, 2, 3]])
            _ = socket.start()
            for _ in 0..<20 {
                let packet = random.below(3) == 0 ? random.bytes(random.below(40)) : random.mutate(seeds[random.below(seeds.count)])
                for action in weave.receive(packet) {
                    switch action {
                    case .deliver(let message):
                        #expect(message.count <= 1024)
                        for socketAction in socket.receive(message) {
                            if case .deliver = socketAction { #expect(socket.isEstablished) }
                        }
                    case .send(let bytes):
                        #expect(bytes.count <= max(WeavePacket.minPacketSize, weave.packetSize))
                    default:
                        break
                    }
                }
            }
        }
    }

    @Test("the GATT server answers every request once, within the MTU")
    func gattServer() {
        var random = SeededGenerator(seed: 29)
        let seeds = Self.seeds()
        for _ in 0..<300 {
            var server = GATTServer(database: GATTDatabase(services: WeaveGATTService.services(slots: [Array(repeating: 0x48, count: 60)])))
            for _ in 0..<20 {
                let bytes = random.below(3) == 0 ? random.bytes(random.below(30)) : random.mutate(seeds[random.below(seeds.count)])
                guard let pdu = try? ATTPDU(decoding: bytes) else { continue }
                let actions = server.receive(pdu)
                let sent = actions.compactMap { if case .send(let answer) = $0 { answer } else { nil } }
                #expect(sent.allSatisfy { $0.encodedBytes.count <= server.mtu })
                if ATTPDU.isRequest(pdu.opcode) {
                    let written = actions.contains { if case .written(_, _, true) = $0 { true } else { false } }
                    #expect(sent.count == 1 || (sent.isEmpty && written), "\(pdu) got \(sent.count) answers")
                }
            }
        }
    }
}
