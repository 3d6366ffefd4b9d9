import Logging
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

@testable import NearbyBLE

/// ATT on the user-space host against ``ScriptedHCITransport``, the test playing the peer: our GATT server answers
/// an MTU exchange, a CCCD write and a Weave write (answered only when the consumer says so), indicates and waits
/// for the confirmation; our GATT client's request gets its response; a disconnection fails what waits.
@Suite(.timeLimit(.minutes(1))) struct GATTHostScriptedTests {
    static let peer = BLEAddress(string: "C0:11:22:33:44:55")!
    let handle: UInt16 = 0x0041

    private func makeHost(_ transport: ScriptedHCITransport) async throws -> BLEHost {
        let host = BLEHost(
            transport: transport, configuration: BLEHost.Configuration(), clock: NearbyClock(ManualClock()),
            logger: Logger(label: "scripted-gatt", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await host.start()
        return host
    }

    /// Delivers an ATT PDU from the peer and returns our next ATT PDU, freeing its controller buffer.
    private func exchange(_ transport: ScriptedHCITransport, _ pdu: ATTPDU) async throws -> ATTPDU {
        transport.deliver(HCIVectors.l2cap(handle: handle, cid: 4, pdu.encodedBytes))
        return try await next(transport)
    }

    private func next(_ transport: ScriptedHCITransport) async throws -> ATTPDU {
        let out = try await transport.nextL2CAP(cid: 4)
        transport.deliver(HCIVectors.completedPackets(handle: handle, count: 1))
        return try ATTPDU(decoding: out.payload)
    }

    @Test func theServerAndClientRolesOnOneConnection() async throws {
        let transport = ScriptedHCITransport()
        let host = try await makeHost(transport)
        let events = try await host.publishGATT(WeaveGATTService.services(slots: [[0x48, 1, 2, 3]]))
        var iterator = events.makeAsyncIterator()
        transport.deliver(HCIVectors.leConnectionComplete(handle: handle, peer: Self.peer, central: false))

        #expect(try await exchange(transport, .exchangeMTURequest(mtu: 247)) == .exchangeMTUResponse(mtu: 517))
        #expect(await host.attMTU(connection: handle) == 247)
        #expect(try await exchange(transport, .writeRequest(handle: 6, value: [2, 0])) == .writeResponse)
        guard case .subscriptionChanged(let subscriber, NearbyGATTUUIDs.weaveServerToClient, true) = await iterator.next() else {
            Issue.record("no subscription event")
            return
        }
        #expect(subscriber == GATTPeer(connection: handle, address: Self.peer))

        // A Weave packet: handed over, answered when the consumer says so.
        transport.deliver(HCIVectors.l2cap(handle: handle, cid: 4, ATTPDU.writeRequest(handle: 3, value: [0x80, 0, 1, 0, 1, 0, 0]).encodedBytes))
        guard case .written(let writer, NearbyGATTUUIDs.weaveClientToServer, let value, true) = await iterator.next() else {
            Issue.record("no write event")
            return
        }
        #expect(value == [0x80, 0, 1, 0, 1, 0, 0])
        await host.respondToWrite(writer)
        #expect(try await next(transport) == .writeResponse)

        // An indication waits for its confirmation.
        async let indicated: Void = host.indicate([0x81, 0, 1, 0, 0x14], of: NearbyGATTUUIDs.weaveServerToClient, to: writer)
        #expect(try await next(transport) == .indication(handle: 5, value: [0x81, 0, 1, 0, 0x14]))
        transport.deliver(HCIVectors.l2cap(handle: handle, cid: 4, ATTPDU.confirmation.encodedBytes))
        try await indicated

        // Our client role on the same connection.
        async let read = host.attRequest(connection: handle, .readRequest(handle: 9))
        #expect(try await next(transport) == .readRequest(handle: 9))
        transport.deliver(HCIVectors.l2cap(handle: handle, cid: 4, ATTPDU.readResponse([7, 7]).encodedBytes))
        #expect(try await read == .readResponse([7, 7]))

        // A malformed request gets an error, and an unanswered indication fails when the link ends.
        #expect(try await exchange(transport, .other(opcode: 0x0A, parameters: [])) == .errorResponse(requestOpcode: 0x0A, handle: 0, error: ATTPDU.ErrorCode.invalidPDU))
        let pending = Task { try await host.indicate([1], of: NearbyGATTUUIDs.weaveServerToClient, to: writer) }
        _ = try await next(transport)
        transport.deliver(HCIVectors.disconnectionComplete(handle: handle))
        await #expect(throws: NearbyError.self) { try await pending.value }
        guard case .disconnected(writer) = await iterator.next() else {
            Issue.record("no disconnection event")
            return
        }
        await host.close()
    }
}
