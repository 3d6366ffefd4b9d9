import NearbyTestSupport
import NearbyWire
import Testing

import NearbyBLE

/// ``HCICommandFlow`` driven by real Command Complete / Command Status bytes.
@Suite(.timeLimit(.minutes(5))) struct HCICommandFlowTests {
    /// Decodes an H4 event packet (indicator included) the way the host does.
    private func event(_ h4: [UInt8]) throws -> HCIEvent {
        #expect(h4.first == 0x04)
        return try HCIEvent(decoding: Array(h4.dropFirst()))
    }

    private func writes(_ actions: [HCICommandFlow.Action]) -> [[UInt8]] {
        actions.compactMap { if case .write(_, let bytes) = $0 { bytes } else { nil } }
    }

    @Test func aCommandIsWrittenWithItsTimeoutAndCompletesWithItsReturnParameters() throws {
        var flow = HCICommandFlow()
        let (id, actions) = flow.submit(HCICommand(.leReadBufferSize), timeout: .seconds(2))
        #expect(writes(actions) == [[0x01, 0x02, 0x20, 0x00]])
        #expect(actions.contains { if case .scheduleTimeout(id, .seconds(2)) = $0 { true } else { false } })
        #expect(flow.credits == 0)
        // Command Complete, 1 credit, opcode 0x2002, status 0, LE ACL length 251, 8 buffers.
        let doneActions = flow.receive(try event([0x04, 0x0E, 0x07, 0x01, 0x02, 0x20, 0x00, 0xFB, 0x00, 0x08]))
        let done = try #require(doneActions)
        #expect(done.count == 2)
        #expect({ if case .cancelTimeout(id) = done[0] { true } else { false } }())
        #expect({ if case .succeed(id, [0xFB, 0x00, 0x08]) = done[1] { true } else { false } }())
        #expect(flow.credits == 1)
        #expect(flow.outstandingCount == 0)
    }

    @Test func commandsWaitForCreditsAndGoOutInOrder() throws {
        var flow = HCICommandFlow()
        let (first, a1) = flow.submit(HCICommand(.reset), timeout: .seconds(1))
        let (_, a2) = flow.submit(.setEventMask(), timeout: .seconds(1))
        let (_, a3) = flow.submit(.leSetEventMask(), timeout: .seconds(1))
        #expect(writes(a1).count == 1)
        #expect(a2.isEmpty && a3.isEmpty)
        #expect(flow.queuedCount == 2)
        // Reset completes and the controller now accepts two commands: both queued ones go out, in order.
        let nextActions = flow.receive(try event(HCIVectors.commandComplete(.reset, [0x00], credits: 2)))
        let next = try #require(nextActions)
        #expect({ if case .succeed(first, []) = next[1] { true } else { false } }())
        #expect(writes(next).map { Array($0.prefix(3)) } == [[0x01, 0x01, 0x0C], [0x01, 0x01, 0x20]])
        #expect(flow.credits == 0)
        #expect(flow.outstandingCount == 2)
    }

    @Test func zeroCreditsHoldCommandsUntilACreditUpdate() throws {
        var flow = HCICommandFlow()
        _ = flow.submit(HCICommand(.reset), timeout: .seconds(1))
        // Reset completes with Num_HCI_Command_Packets 0: the controller is busy.
        _ = flow.receive(try event(HCIVectors.commandComplete(.reset, [0x00], credits: 0)))
        let (_, held) = flow.submit(HCICommand(.leReadBufferSize), timeout: .seconds(1))
        #expect(held.isEmpty)
        // A Command Complete for opcode 0x0000 (no command) only gives credits back.
        let updateActions = flow.receive(try event([0x04, 0x0E, 0x03, 0x01, 0x00, 0x00]))
        let update = try #require(updateActions)
        #expect(writes(update) == [[0x01, 0x02, 0x20, 0x00]])
    }

    @Test func commandStatusAnswersACommandAndANonZeroStatusFailsIt() throws {
        var flow = HCICommandFlow()
        let (id, _) = flow.submit(.disconnect(handle: 0x0040), timeout: .seconds(1))
        // Command Status 0x0C (command disallowed), 1 credit, opcode 0x0406.
        let actionsActions = flow.receive(try event([0x04, 0x0F, 0x04, 0x0C, 0x01, 0x06, 0x04]))
        let actions = try #require(actionsActions)
        let failure = try #require(actions.compactMap { if case .fail(id, let e) = $0 { e } else { nil } }.first)
        #expect(failure.code == .hciCommandFailed)
    }

    @Test func aCommandNotAnsweredFailsWithTimeoutAndTheNextOneGoesOut() throws {
        var flow = HCICommandFlow()
        let (first, _) = flow.submit(HCICommand(.reset), timeout: .seconds(1))
        let (second, queued) = flow.submit(HCICommand(.leReadLocalFeatures), timeout: .seconds(1))
        #expect(queued.isEmpty)
        let actions = flow.timedOut(first)
        let failure = try #require(actions.compactMap { if case .fail(first, let e) = $0 { e } else { nil } }.first)
        #expect(failure.code == .timeout)
        #expect(writes(actions) == [[0x01, 0x03, 0x20, 0x00]])
        // The late answer to the timed-out command matches nothing.
        let late = flow.receive(try event(HCIVectors.commandComplete(.reset, [0x00])))
        #expect(late == nil)
        // A timer that fires after its command was answered does nothing.
        _ = flow.receive(try event(HCIVectors.commandComplete(.leReadLocalFeatures, [0x00, 0, 0, 0, 0, 0, 0, 0, 0])))
        let stale = flow.timedOut(second)
        #expect(stale.isEmpty)
    }

    @Test func twoCommandsWithOneOpcodeAreNeverOutstandingTogether() throws {
        var flow = HCICommandFlow()
        _ = flow.receive(try event([0x04, 0x0E, 0x03, 0x05, 0x00, 0x00]))  // five credits
        let (a, first) = flow.submit(.leSetScanEnable(true), timeout: .seconds(1))
        let (b, second) = flow.submit(.leSetScanEnable(false), timeout: .seconds(1))
        #expect(writes(first).count == 1)
        #expect(second.isEmpty)
        let answerActions = flow.receive(try event(HCIVectors.commandComplete(.leSetScanEnable, [0x00], credits: 4)))
        let answer = try #require(answerActions)
        #expect({ if case .succeed(a, []) = answer[1] { true } else { false } }())
        #expect(writes(answer).count == 1)
        #expect(flow.outstandingCount == 1)
        _ = b
    }

    @Test func afterFailAllEveryCommandFails() throws {
        var flow = HCICommandFlow()
        let (sent, _) = flow.submit(HCICommand(.reset), timeout: .seconds(1))
        let (queued, _) = flow.submit(HCICommand(.leReadBufferSize), timeout: .seconds(1))
        let actions = flow.failAll(NearbyError(.mediumUnavailable, "gone"))
        let failed = actions.compactMap { if case .fail(let id, _) = $0 { id } else { nil } }
        #expect(failed == [sent, queued])
        let (_, later) = flow.submit(HCICommand(.reset), timeout: .seconds(1))
        #expect(later.count == 1)
        #expect(writes(later).isEmpty)
    }

    @Test func aFailedWriteFailsTheCommandAndFreesTheCredit() throws {
        var flow = HCICommandFlow()
        let (id, _) = flow.submit(HCICommand(.reset), timeout: .seconds(1))
        let (_, queued) = flow.submit(HCICommand(.leReadBufferSize), timeout: .seconds(1))
        #expect(queued.isEmpty)
        let actions = flow.writeFailed(id, NearbyError(.endpointIoError, "broken"))
        #expect(actions.contains { if case .fail(id, _) = $0 { true } else { false } })
        #expect(writes(actions).count == 1)
    }
}
