import NearbyTestSupport
import NearbyWire
import Testing

/// Golden bytes of Weave packets, from the header layout of `GNSWeavePacket.m` (control `1CCCNNNN`, data
/// `0CCCFL00`, big-endian fields), and the connection machine's handshake, counters and fragmentation.
@Suite("Weave packets and connections", .timeLimit(.minutes(1)))
struct WeaveTests {
    @Test("control and data packets")
    func golden() throws {
        let request = WeavePacket(counter: 0, .connectionRequest(minVersion: 1, maxVersion: 1, maxPacketSize: 0, data: []))
        #expect(Hex.encode(request.encodedBytes) == "80000100010000")
        let confirm = WeavePacket(counter: 0, .connectionConfirm(version: 1, packetSize: 244, data: []))
        #expect(Hex.encode(confirm.encodedBytes) == "81000100f4")
        #expect(WeavePacket(counter: 3, .error).encodedBytes == [0xB2])
        #expect(Hex.encode(WeavePacket(counter: 1, .data(isFirst: true, isLast: true, payload: [0x68, 0x69])).encodedBytes) == "1c6869")
        #expect(WeavePacket(counter: 2, .data(isFirst: true, isLast: false, payload: [])).encodedBytes == [0x28])
        #expect(WeavePacket(counter: 3, .data(isFirst: false, isLast: true, payload: [])).encodedBytes == [0x34])
        for packet in [request, confirm, WeavePacket(counter: 7, .error), WeavePacket(counter: 5, .data(isFirst: false, isLast: false, payload: [1]))] {
            #expect(try WeavePacket(decoding: packet.encodedBytes) == packet)
        }
    }

    @Test("hostile packets", arguments: ["", "80000100", "8100", "83", "8f", "80" + String(repeating: "00", count: 20)])
    func hostile(_ hex: String) {
        _ = decodeOrNearbyError([.malformedBLESocketPacket], report: { Issue.record(Comment(rawValue: $0)) }) {
            try WeavePacket(decoding: Hex.decodeOrEmpty(hex))
        }
    }

    private func sends(_ actions: [WeaveConnection.Action]) -> [[UInt8]] {
        actions.compactMap { if case .send(let p) = $0 { p } else { nil } }
    }

    private func delivered(_ actions: [WeaveConnection.Action]) -> [[UInt8]] {
        actions.compactMap { if case .deliver(let m) = $0 { m } else { nil } }
    }

    /// A connected pair: the client offered `clientSize`, the server can take `serverSize`.
    private func connectedPair(clientSize: Int, serverSize: Int) -> (WeaveConnection, WeaveConnection) {
        var client = WeaveConnection(role: .client, maxPacketSize: clientSize)
        var server = WeaveConnection(role: .server, maxPacketSize: serverSize)
        let request = sends(client.start())
        let answer = server.receive(request[0])
        _ = client.receive(sends(answer)[0])
        return (client, server)
    }

    @Test("the handshake settles on the smaller packet size; 0 lets the server choose")
    func handshake() {
        var client = WeaveConnection(role: .client, maxPacketSize: 100)
        var server = WeaveConnection(role: .server, maxPacketSize: 60)
        let request = sends(client.start())
        #expect(Hex.encode(request[0]) == "80000100010064")
        let answer = server.receive(request[0])
        #expect(sends(answer) == [WeavePacket(counter: 0, .connectionConfirm(version: 1, packetSize: 60, data: [])).encodedBytes])
        #expect(server.isConnected && server.packetSize == 60)
        _ = client.receive(sends(answer)[0])
        #expect(client.isConnected && client.packetSize == 60)

        var iOSLike = WeaveConnection(role: .client, maxPacketSize: 100)
        var server2 = WeaveConnection(role: .server, maxPacketSize: 244)
        _ = server2.receive(sends(iOSLike.start(advertisedPacketSize: 0))[0])
        #expect(server2.packetSize == 244)

        // One packet is one attribute value: never above 509 bytes, whatever the MTU.
        var big = WeaveConnection(role: .server, maxPacketSize: 514)
        _ = big.receive(WeavePacket(counter: 0, .connectionRequest(minVersion: 1, maxVersion: 1, maxPacketSize: 0, data: [])).encodedBytes)
        #expect(big.packetSize == 509)
        #expect(big.packets(for: Array(repeating: 0, count: 1000)).allSatisfy { $0.count <= 509 })
    }

    @Test("messages are split into packets of the packet size, counters run on mod 8 from 1")
    func fragmentation() throws {
        var (client, server) = connectedPair(clientSize: 20, serverSize: 20)
        let message = (0..<100).map { UInt8($0) }
        let packets = client.packets(for: message)
        #expect(packets.count == 6)  // 19 bytes of data per 20-byte packet
        #expect(packets.allSatisfy { $0.count <= 20 })
        let headers = try packets.map { try WeavePacket(decoding: $0) }
        #expect(headers.map(\.counter) == [1, 2, 3, 4, 5, 6])
        var received: [[UInt8]] = []
        for packet in packets { received += delivered(server.receive(packet)) }
        #expect(received == [message])
        // Two more messages wrap the counter: 7, 0, …
        let next = client.packets(for: Array(repeating: 1, count: 30))
        #expect(try next.map { try WeavePacket(decoding: $0).counter } == [7, 0])
        for packet in next { _ = server.receive(packet) }
        #expect(client.packets(for: []) == [[0x1C]])  // an empty message: one packet, first and last
    }

    @Test("a wrong counter, a stray continuation or a second request close with an error packet", arguments: [0, 1, 2])
    func violations(_ which: Int) {
        var (_, server) = connectedPair(clientSize: 50, serverSize: 50)
        let bad: [UInt8] = switch which {
        case 0: WeavePacket(counter: 4, .data(isFirst: true, isLast: true, payload: [1])).encodedBytes
        case 1: WeavePacket(counter: 1, .data(isFirst: false, isLast: true, payload: [1])).encodedBytes
        default: WeavePacket(counter: 1, .connectionRequest(minVersion: 1, maxVersion: 1, maxPacketSize: 0, data: [])).encodedBytes
        }
        let actions = server.receive(bad)
        #expect(sends(actions) == [WeavePacket(counter: 1, .error).encodedBytes])
        guard case .closed(let error) = actions.last else { Issue.record("not closed: \(actions)"); return }
        #expect(error.code == .malformedBLESocketPacket)
        #expect(server.isClosed)
    }

    @Test("the peer's error packet closes without an answer; an unsupported version is refused")
    func errorsFromPeer() {
        var (client, server) = connectedPair(clientSize: 50, serverSize: 50)
        let closing = server.close()
        let actions = client.receive(sends(closing)[0])
        #expect(sends(actions).isEmpty)
        guard case .closed(let error) = actions.last else { Issue.record("not closed"); return }
        #expect(error.code == .endpointIoError)

        var server2 = WeaveConnection(role: .server, maxPacketSize: 50)
        let refused = server2.receive(WeavePacket(counter: 0, .connectionRequest(minVersion: 2, maxVersion: 3, maxPacketSize: 0, data: [])).encodedBytes)
        #expect(server2.isClosed)
        #expect(sends(refused).count == 1)
    }
}
