import Logging
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

@testable import NearbyBLE

/// ``BLEHost`` against ``ScriptedHCITransport``: start-up, command timeouts on a ``ManualClock``, connections and
/// L2CAP channels, and hostile input, all without Bumble.
@Suite(.timeLimit(.minutes(5))) struct BLEHostScriptedTests {
    static let peer = BLEAddress(string: "C0:11:22:33:44:55")!
    let handle: UInt16 = 0x0040

    private func makeHost(
        _ transport: ScriptedHCITransport, clock: ManualClock = ManualClock()
    ) async throws -> BLEHost {
        var configuration = BLEHost.Configuration()
        configuration.channelParameters = CreditChannelParameters(mtu: 512, mps: 100, credits: 8)
        let host = BLEHost(
            transport: transport, configuration: configuration, clock: NearbyClock(clock),
            logger: Logger(label: "scripted-host", factory: { _ in SwiftLogNoOpLogHandler() }))
        try await host.start()
        return host
    }

    /// Connects as central through a scripted LE Connection Complete.
    private func connect(_ host: BLEHost, _ transport: ScriptedHCITransport) async throws -> UInt16 {
        transport.reply(
            to: .leCreateConnection,
            with: .statusThen([HCIVectors.leConnectionComplete(handle: handle, peer: Self.peer, central: true)]))
        return try await host.connect(to: Self.peer)
    }

    /// Opens a channel to PSM 0x81; the scripted peer answers with CID 0x0050, MTU 256, MPS 64 and `credits`.
    private func openChannel(
        _ host: BLEHost, _ transport: ScriptedHCITransport, credits: UInt16 = 4
    ) async throws -> L2CAPChannel {
        async let opening = host.openChannel(handle: handle, psm: 0x81)
        let request = try await transport.nextL2CAP(cid: 5)
        let signal = try L2CAPSignal(decoding: request.payload)
        #expect(signal == .leCreditConnectionRequest(identifier: signal.identifier, psm: 0x81, sourceCID: 0x40, mtu: 512, mps: 100, credits: 8))
        let response = L2CAPSignal.leCreditConnectionResponse(
            identifier: signal.identifier, destinationCID: 0x50, mtu: 256, mps: 64, credits: credits, result: 0)
        transport.deliver(HCIVectors.completedPackets(handle: handle, count: 1))
        transport.deliver(HCIVectors.l2cap(handle: handle, cid: 5, response.encoded))
        return try await opening
    }

    @Test func startUpRunsTheInitSequenceAgainstTheController() async throws {
        let transport = ScriptedHCITransport(extended: true)
        let host = try await makeHost(transport)
        #expect(
            transport.commands == [
                .reset, .setEventMask, .leSetEventMask, .leReadBufferSize, .leReadLocalFeatures, .leSetRandomAddress,
            ])
        #expect(await host.supportsExtendedAdvertising)
        // Every command was answered, so every command timeout was cancelled: nothing sleeps on the clock.
        #expect(await host.timers.count == 0)
        let acl = await host.acl
        #expect(acl.maxDataLength == 27 && acl.bufferCount == 4)
        await host.close()
    }

    @Test func sharedBuffersAreReadWithReadBufferSize() async throws {
        let transport = ScriptedHCITransport()
        // LE Read Buffer Size says 0: the LE buffers are shared; Read Buffer Size: 310 bytes, SCO 0, 6 buffers.
        transport.reply(to: .leReadBufferSize, with: .complete([0, 0, 0, 0]))
        transport.reply(to: .readBufferSize, with: .complete([0, 0x36, 0x01, 0, 0x06, 0x00, 0, 0]))
        let host = try await makeHost(transport)
        #expect(transport.commands.contains(.readBufferSize))
        let acl = await host.acl
        #expect(acl.maxDataLength == 310 && acl.bufferCount == 6)
        await host.close()
    }

    @Test func aControllerThatNeverAnswersResetFailsStartUp() async throws {
        let transport = ScriptedHCITransport()
        transport.reply(to: .reset, with: .silence)
        let clock = ManualClock()
        let host = BLEHost(
            transport: transport, configuration: .init(), clock: NearbyClock(clock), logger: Logger(label: "scripted-host", factory: { _ in SwiftLogNoOpLogHandler() }))
        let start = Task { try await host.start() }
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .seconds(2))
        await #expect { try await start.value } throws: { ($0 as? NearbyError)?.code == .mediumUnavailable }
        await host.close()
    }

    @Test func aCommandTimesOutOnTheClockAndTheNextCommandStillWorks() async throws {
        let transport = ScriptedHCITransport()
        let clock = ManualClock()
        let host = try await makeHost(transport, clock: clock)
        transport.reply(to: .leSetScanEnable, with: .silence)
        let silent = Task { try await host.execute(.leSetScanEnable(true)) }
        await clock.waitForSleepers(atLeast: 1)
        clock.advance(by: .milliseconds(1999))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .milliseconds(1))
        await #expect { try await silent.value } throws: { ($0 as? NearbyError)?.code == .timeout }
        try await host.execute(HCICommand(.leReadBufferSize))
        #expect(await host.failureReason == nil)
        await host.close()
    }

    @Test func anUnansweredChannelRequestTimesOut() async throws {
        let transport = ScriptedHCITransport()
        let clock = ManualClock()
        let host = try await makeHost(transport, clock: clock)
        _ = try await connect(host, transport)
        let opening = Task { try await host.openChannel(handle: handle, psm: 0x81) }
        _ = try await transport.nextL2CAP(cid: 5)
        await clock.waitForSleepers(atLeast: 1)
        clock.advanceToNextDeadline()
        await #expect { try await opening.value } throws: { ($0 as? NearbyError)?.code == .timeout }
        await host.close()
    }

    @Test func aChannelOpensAndCarriesSDUsBothWays() async throws {
        let transport = ScriptedHCITransport()
        let host = try await makeHost(transport)
        #expect(try await connect(host, transport) == handle)
        let channel = try await openChannel(host, transport)
        #expect(channel.remoteCID == 0x50 && channel.peerMTU == 256 && channel.peerMPS == 64)
        #expect(channel.peer == Self.peer)
        try await channel.send(Array("hello".utf8))
        let frame = try await transport.nextL2CAP(cid: 0x50)
        #expect(frame.payload == [0x05, 0x00] + Array("hello".utf8))
        #expect(await channel.availableCredits() == 3)
        transport.deliver(HCIVectors.l2cap(handle: handle, cid: channel.localCID, [0x03, 0x00] + Array("abc".utf8)))
        #expect(try await channel.receive() == Array("abc".utf8))
        // The peer disconnects the channel: the reader sees the end, and we answered.
        transport.deliver(
            HCIVectors.l2cap(
                handle: handle, cid: 5,
                L2CAPSignal.disconnectionRequest(identifier: 9, destinationCID: channel.localCID, sourceCID: 0x50).encoded))
        #expect(try await channel.receive() == nil)
        let answer = try await transport.nextL2CAP(cid: 5)
        #expect(try L2CAPSignal(decoding: answer.payload) == .disconnectionResponse(identifier: 9, destinationCID: 0x40, sourceCID: 0x50))
        await host.close()
    }

    @Test func aSenderWaitsForThePeersCredits() async throws {
        let transport = ScriptedHCITransport()
        let host = try await makeHost(transport)
        _ = try await connect(host, transport)
        let channel = try await openChannel(host, transport, credits: 0)
        let sending = Task { try await channel.send([1, 2, 3]) }
        // Flow Control Credit from the peer for its CID 0x0050: one credit.
        transport.deliver(
            HCIVectors.l2cap(handle: handle, cid: 5, L2CAPSignal.flowControlCredit(identifier: 4, cid: 0x50, credits: 1).encoded))
        let frame = try await transport.nextL2CAP(cid: 0x50)
        #expect(frame.payload == [0x03, 0x00, 1, 2, 3])
        try await sending.value
        await host.close()
    }

    @Test func theEndOfTheConnectionFailsItsChannels() async throws {
        let transport = ScriptedHCITransport()
        let host = try await makeHost(transport)
        _ = try await connect(host, transport)
        let channel = try await openChannel(host, transport)
        let reading = Task { try await channel.receive() }
        transport.deliver(HCIVectors.disconnectionComplete(handle: handle))
        await #expect { try await reading.value } throws: { ($0 as? NearbyError)?.code == .endpointIoError }
        await #expect(throws: NearbyError.self) { try await channel.send([1]) }
        #expect(await host.failureReason == nil)
        await host.close()
    }

    @Test func aLostControllerFailsEverythingPending() async throws {
        let transport = ScriptedHCITransport()
        let host = try await makeHost(transport)
        _ = try await connect(host, transport)
        let channel = try await openChannel(host, transport)
        let reading = Task { try await channel.receive() }
        transport.reply(to: .leSetScanEnable, with: .silence)
        let command = Task { try await host.execute(.leSetScanEnable(true)) }
        _ = await transport.nextWrite { if case .command(let body) = $0 { body.prefix(2) == [0x0C, 0x20] } else { false } }
        transport.fail(NearbyError(.mediumUnavailable, "the controller went away"))
        await #expect(throws: NearbyError.self) { try await reading.value }
        await #expect(throws: NearbyError.self) { try await command.value }
        #expect(await host.failureReason?.code == .mediumUnavailable)
        await #expect(throws: NearbyError.self) { try await host.execute(HCICommand(.reset)) }
    }
    @Test func malformedControllerInputAndSignallingAreRejected() async throws {
        let transport = ScriptedHCITransport()
        let host = try await makeHost(transport)
        // Malformed events: bad lengths, truncated LE meta events, ACL data for an unknown handle.
        transport.deliver([0x04, 0x0E, 0x01, 0x01])
        transport.deliver([0x04, 0x3E, 0x03, 0x0D, 0x01, 0x01])
        transport.deliver([0x04, 0x3E, 0x04, 0x01, 0x00, 0x01, 0x00])
        transport.deliver([0x02, 0x99, 0x00, 0x02, 0x00, 0x01, 0x02])
        try await host.execute(HCICommand(.leReadBufferSize))  // still answering commands
        _ = try await connect(host, transport)
        // Malformed signalling from "the peer": truncated request, unknown code, credits for an unknown CID.
        for signalling in [[0x14, 0x07, 0x0A, 0x00, 0x81], [0x7F, 0x08, 0x00, 0x00], [0x16, 0x09, 0x04, 0x00, 0x77, 0x00, 0x01, 0x00]] as [[UInt8]] {
            transport.deliver(HCIVectors.l2cap(handle: handle, cid: 5, signalling))
        }
        // Command Reject "not understood" for the first two; the credits for CID 0x0077 are ignored.
        for identifier in [UInt8(7), 8] {
            let reject = try await transport.nextL2CAP(cid: 5)
            #expect(try L2CAPSignal(decoding: reject.payload) == .commandReject(identifier: identifier, reason: 0, data: []))
            transport.deliver(HCIVectors.completedPackets(handle: handle, count: 1))
        }
        // A K-frame for a channel that does not exist.
        transport.deliver(HCIVectors.l2cap(handle: handle, cid: 0x55, [1, 2]))
        let channel = try await openChannel(host, transport)
        try await channel.send(Array("still fine".utf8))
        #expect(try await transport.nextL2CAP(cid: 0x50).payload == [10, 0] + Array("still fine".utf8))
        #expect(await host.failureReason == nil)
        // A corrupt H4 stream (unknown packet indicator) ends the host cleanly, without a crash.
        let reading = Task { try await channel.receive() }
        transport.deliver([0x09, 0x01, 0x02])
        await #expect(throws: NearbyError.self) { try await reading.value }
        #expect(await host.failureReason?.code == .mediumUnavailable)
        await host.close()
    }
    @Test func aclFragmentsWaitForTheControllersBuffers() async throws {
        let transport = ScriptedHCITransport(bufferLength: 27, bufferCount: 1)
        let host = try await makeHost(transport)
        _ = try await connect(host, transport)
        let channel = try await openChannel(host, transport)
        // A 40-byte SDU is one K-frame PDU of 46 bytes: two ACL fragments of at most 27 bytes, one buffer.
        let sdu = Array(UInt8(0)..<40)
        let sending = Task { try await channel.send(sdu) }
        let isACL: @Sendable (H4Packet) -> Bool = { if case .acl = $0 { true } else { false } }
        let firstPacket = await transport.nextWrite(where: isACL)
        let first = try #require(aclBody(firstPacket))
        let acl = await host.acl
        #expect(acl.credits == 0 && acl.packetsInFlight(handle) == 1)
        transport.deliver(HCIVectors.completedPackets(handle: handle, count: 1))
        let secondPacket = await transport.nextWrite(where: isACL)
        let second = try #require(aclBody(secondPacket))
        try await sending.value
        let fragments = try [first, second].map { try ACLPacket(decoding: $0) }
        #expect(fragments.map(\.boundary) == [.firstNonFlushable, .continuing])
        let pdu = try L2CAPFrame.decode(fragments[0].data + fragments[1].data)
        #expect(pdu.cid == 0x50 && pdu.payload == [40, 0] + sdu)
        await host.close()
    }
}

private func aclBody(_ packet: H4Packet) -> [UInt8]? {
    if case .acl(let body) = packet { body } else { nil }
}
