import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyBLE

/// ``ACLFlowControl`` driven by real ACL and Number Of Completed Packets bytes.
@Suite(.timeLimit(.minutes(5))) struct ACLFlowControlTests {
    private func writes(_ actions: [ACLFlowControl.Action]) -> [[UInt8]] {
        actions.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
    }

    private func completed(_ h4: [UInt8]) throws -> [CompletedPackets] {
        let event = try HCIEvent(decoding: Array(h4.dropFirst()))
        guard case .numberOfCompletedPackets(let entries) = event else {
            Issue.record("not a Number Of Completed Packets event: \(event)")
            return []
        }
        return entries
    }

    @Test func aPDUIsFragmentedToTheBufferSizeAndWaitsForCredits() throws {
        var flow = ACLFlowControl()
        flow.setBufferSize(length: 27, count: 2)
        flow.connectionOpened(0x0040)
        let pdu = L2CAPFrame.encode(cid: 0x0040, payload: Array(0..<60))  // 64 bytes: 27 + 27 + 10
        let (ticket, actions) = flow.send(handle: 0x0040, pdu: pdu)
        // Two buffers: two fragments leave, the first non-flushable (0x00 in the flags), the next continuing (0x10).
        #expect(writes(actions).map { Array($0.prefix(5)) } == [[0x02, 0x40, 0x00, 0x1B, 0x00], [0x02, 0x40, 0x10, 0x1B, 0x00]])
        #expect(flow.credits == 0)
        #expect(flow.packetsInFlight(0x0040) == 2)
        // Number Of Completed Packets: handle 0x0040 finished 1 packet.
        let next = flow.completed(try completed([0x04, 0x13, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00]))
        #expect(writes(next) == [[0x02, 0x40, 0x10, 0x0A, 0x00] + Array(50..<60)])
        #expect({ if case .sent(ticket) = next.last! { true } else { false } }())
    }

    @Test func connectionsTakeTurnsButOnePDUsFragmentsStayTogether() throws {
        var flow = ACLFlowControl()
        flow.setBufferSize(length: 27, count: 1)
        flow.connectionOpened(1)
        flow.connectionOpened(2)
        let long = L2CAPFrame.encode(cid: 0x40, payload: Array(repeating: 0xAA, count: 40))  // two fragments
        let (_, first) = flow.send(handle: 1, pdu: long)
        let (_, second) = flow.send(handle: 2, pdu: L2CAPFrame.encode(cid: 0x40, payload: [1]))
        let (_, third) = flow.send(handle: 1, pdu: L2CAPFrame.encode(cid: 0x41, payload: [2]))
        #expect(writes(first).count == 1)
        #expect(second.isEmpty && third.isEmpty)
        var handles: [String] = []
        for handle in [1, 1, 2, 1] as [UInt16] {
            let actions = flow.completed([CompletedPackets(handle: handle, count: 1)])
            for packet in writes(actions) {
                let acl = try ACLPacket(decoding: Array(packet.dropFirst()))
                handles.append("\(acl.handle)\(acl.boundary == .continuing ? "+" : "")")
            }
        }
        // Connection 2 takes its turn between connection 1's fragments; connection 1's next PDU waits until all
        // of the first one has left.
        #expect(handles == ["2", "1+", "1"])
    }

    @Test func aClosedConnectionFreesItsBuffersAndFailsItsQueue() throws {
        var flow = ACLFlowControl()
        flow.setBufferSize(length: 27, count: 1)
        flow.connectionOpened(1)
        flow.connectionOpened(2)
        _ = flow.send(handle: 1, pdu: L2CAPFrame.encode(cid: 0x40, payload: [1]))
        let (queued, _) = flow.send(handle: 1, pdu: L2CAPFrame.encode(cid: 0x40, payload: [2]))
        let (waiting, none) = flow.send(handle: 2, pdu: L2CAPFrame.encode(cid: 0x40, payload: [3]))
        #expect(none.isEmpty)
        // Disconnection: the controller drops handle 1's packets without reporting them.
        let actions = flow.connectionClosed(1, NearbyError(.endpointIoError, "ended"))
        #expect(actions.contains { if case .failed(queued, _) = $0 { true } else { false } })
        #expect(actions.contains { if case .sent(waiting) = $0 { true } else { false } })
        #expect(writes(actions).count == 1)
        let (gone, failed) = flow.send(handle: 1, pdu: [0, 0, 0x40, 0])
        #expect(failed.contains { if case .failed(gone, let e) = $0 { e.code == .endpointIoError } else { false } })
    }

    @Test func creditsNeverExceedTheControllersBuffers() throws {
        var flow = ACLFlowControl()
        flow.setBufferSize(length: 251, count: 3)
        flow.connectionOpened(1)
        _ = flow.completed(try completed(HCIVectors.completedPackets(handle: 1, count: 50)))
        #expect(flow.credits == 3)
    }

    @Test func inboundFragmentsAreReassembledPerConnection() throws {
        var flow = ACLFlowControl()
        flow.connectionOpened(1)
        // L2CAP PDU of 6 payload bytes on CID 0x0040, in two ACL packets (first flushable 0x20, continuing 0x10).
        let first = try ACLPacket(decoding: [0x01, 0x20, 0x06, 0x00, 0x06, 0x00, 0x40, 0x00, 0x01, 0x02])
        let rest = try ACLPacket(decoding: [0x01, 0x10, 0x04, 0x00, 0x03, 0x04, 0x05, 0x06])
        let none = try flow.receive(first)
        let pdu = try flow.receive(rest)
        #expect(none == nil)
        #expect(pdu == [0x06, 0x00, 0x40, 0x00, 1, 2, 3, 4, 5, 6])
        // Data for a handle that is not connected is refused.
        let stranger = try ACLPacket(decoding: [0x99, 0x20, 0x01, 0x00, 0x00])
        do {
            _ = try flow.receive(stranger)
            Issue.record("ACL data for an unknown handle was accepted")
        } catch {
            #expect((error as? NearbyError)?.code == .malformedHCIPacket)
        }
    }

    @Test func afterFailAllQueuedAndLaterPDUsFail() throws {
        var flow = ACLFlowControl()
        flow.connectionOpened(1)
        _ = flow.send(handle: 1, pdu: L2CAPFrame.encode(cid: 0x40, payload: [1]))
        let (queued, _) = flow.send(handle: 1, pdu: L2CAPFrame.encode(cid: 0x40, payload: [2]))
        let actions = flow.failAll(NearbyError(.mediumUnavailable, "gone"))
        #expect(actions.count == 1)
        #expect({ if case .failed(queued, _) = actions[0] { true } else { false } }())
        let (_, later) = flow.send(handle: 1, pdu: [0, 0, 0x40, 0])
        #expect(writes(later).isEmpty && later.count == 1)
    }
}
