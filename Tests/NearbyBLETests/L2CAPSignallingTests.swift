import NearbyWire
import Testing

import NearbyBLE

/// ``L2CAPSignalling`` and ``CreditChannel`` driven by real LE signalling and K-frame bytes.
@Suite(.timeLimit(.minutes(5))) struct L2CAPSignallingTests {
    private let ours = CreditChannelParameters(mtu: 100, mps: 30, credits: 4)
    private let handle: UInt16 = 0x0040

    private func machine() -> L2CAPSignalling { L2CAPSignalling(ours: ours, openTimeout: .seconds(10)) }

    private func sent(_ actions: [L2CAPSignalling.Action]) -> [[UInt8]] {
        actions.compactMap { if case .send(_, let signal) = $0 { signal.encoded } else { nil } }
    }

    /// Accepts the peer's channel: PSM 0x0081, its CID 0x0045, MTU 512, MPS 64, 2 credits. Returns our key.
    private func acceptedChannel(_ m: inout L2CAPSignalling) throws -> L2CAPChannelKey {
        _ = try m.listen(psm: 0x81)
        // LE Credit Based Connection Request, identifier 3, PSM 0x0081, SCID 0x0045, MTU 512, MPS 64, credits 2.
        let actions = m.receive(
            handle: handle, cid: 5, [0x14, 0x03, 0x0A, 0x00, 0x81, 0x00, 0x45, 0x00, 0x00, 0x02, 0x40, 0x00, 0x02, 0x00])
        // Response: identifier 3, DCID 0x0040, MTU 100, MPS 30, credits 4, result success.
        #expect(sent(actions) == [[0x15, 0x03, 0x0A, 0x00, 0x40, 0x00, 0x64, 0x00, 0x1E, 0x00, 0x04, 0x00, 0x00, 0x00]])
        let info = try #require(actions.compactMap { if case .accepted(0x81, let info) = $0 { info } else { nil } }.first)
        #expect(info.remoteCID == 0x45 && info.peerMTU == 512 && info.peerMPS == 64)
        return info.key
    }

    @Test func ourRequestOpensAChannelWhenThePeerAccepts() throws {
        var m = machine()
        let (id, actions) = try m.open(handle: handle, psm: 0x0080)
        #expect(id == 1)
        // Request: identifier 1, PSM 0x0080, SCID 0x0040, MTU 100, MPS 30, credits 4.
        #expect(sent(actions) == [[0x14, 0x01, 0x0A, 0x00, 0x80, 0x00, 0x40, 0x00, 0x64, 0x00, 0x1E, 0x00, 0x04, 0x00]])
        #expect(actions.contains { if case .scheduleOpenTimeout(1, .seconds(10)) = $0 { true } else { false } })
        // Response: identifier 1, DCID 0x0050, MTU 256, MPS 23, credits 1, success.
        let answer = m.receive(
            handle: handle, cid: 5, [0x15, 0x01, 0x0A, 0x00, 0x50, 0x00, 0x00, 0x01, 0x17, 0x00, 0x01, 0x00, 0x00, 0x00])
        let info = try #require(answer.compactMap { if case .opened(1, let info) = $0 { info } else { nil } }.first)
        #expect(info.remoteCID == 0x50 && info.peerMTU == 256 && info.peerMPS == 23)
        #expect(answer.contains { if case .cancelOpenTimeout(1) = $0 { true } else { false } })
        let credits = [m.takeCredit(info.key), m.takeCredit(info.key)]
        #expect(credits == [true, false])
    }

    @Test func aRefusalOrSilenceFailsTheOpen() throws {
        var m = machine()
        _ = try m.open(handle: handle, psm: 0x0080)
        // Response with result 0x0002 (LE_PSM not supported).
        let refused = m.receive(
            handle: handle, cid: 5, [0x15, 0x01, 0x0A, 0x00, 0x00, 0x00, 0x17, 0x00, 0x17, 0x00, 0x00, 0x00, 0x02, 0x00])
        #expect(refused.contains { if case .openFailed(1, let e) = $0 { e.code == .l2capChannelFailed } else { false } })
        let (second, _) = try m.open(handle: handle, psm: 0x0080)
        let timedOut = m.openTimedOut(second)
        #expect(timedOut.contains { if case .openFailed(second, let e) = $0 { e.code == .timeout } else { false } })
        let late = m.openTimedOut(second)
        #expect(late.isEmpty)
    }

    @Test func requestsForUnknownPSMsOrInvalidParametersAreRefused() throws {
        var m = machine()
        // PSM 0x0099 has no server: result 0x0002.
        let noServer = m.receive(
            handle: handle, cid: 5, [0x14, 0x02, 0x0A, 0x00, 0x99, 0x00, 0x45, 0x00, 0x00, 0x02, 0x40, 0x00, 0x02, 0x00])
        #expect(sent(noServer).first?.suffix(2) == [0x02, 0x00])
        _ = try m.listen(psm: 0x81)
        // MTU 22 is below the minimum: result 0x000B.
        let tooSmall = m.receive(
            handle: handle, cid: 5, [0x14, 0x04, 0x0A, 0x00, 0x81, 0x00, 0x45, 0x00, 0x16, 0x00, 0x40, 0x00, 0x02, 0x00])
        #expect(sent(tooSmall).first?.suffix(2) == [0x0B, 0x00])
        // SCID 0x0005 is not a dynamic CID: result 0x0009.
        let badCID = m.receive(
            handle: handle, cid: 5, [0x14, 0x05, 0x0A, 0x00, 0x81, 0x00, 0x05, 0x00, 0x00, 0x02, 0x40, 0x00, 0x02, 0x00])
        #expect(sent(badCID).first?.suffix(2) == [0x09, 0x00])
    }

    @Test func anSDUIsReassembledFromKFramesAndCreditsGoBackInBatches() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        // SDU of 40 bytes in two K-frames (MPS 30): 2-byte length + 28 bytes, then 12 bytes.
        let sdu = Array(UInt8(0)..<40)
        let frames = KFrameSegmenter.segments(sdu: sdu, mps: 30)
        #expect(frames.map(\.count) == [30, 12])
        let partial = m.receive(handle: handle, cid: key.localCID, frames[0])
        #expect(sent(partial).isEmpty)  // 3 of 4 credits still outstanding: nothing returned yet
        _ = m.read(key)  // the reader now waits
        let done = m.receive(handle: handle, cid: key.localCID, frames[1])
        #expect(done.contains { if case .deliver(key, sdu) = $0 { true } else { false } })
        // Two credits used, half of 4 reached: Flow Control Credit for CID 0x0040, 2 credits.
        #expect(sent(done).map { Array($0.dropFirst(2)) } == [[0x04, 0x00, 0x40, 0x00, 0x02, 0x00]])
    }

    @Test func queuedSDUsWaitForTheReaderAndAreCreditedWhenRead() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        for byte in [UInt8(1), 2, 3] { _ = m.receive(handle: handle, cid: key.localCID, [0x01, 0x00, byte]) }
        let read1 = m.read(key)
        let (first, grant) = try #require(read1)
        #expect({ if case .sdu([1]) = first { true } else { false } }())
        #expect(sent(grant).map { Array($0.dropFirst(2)) } == [[0x04, 0x00, 0x40, 0x00, 0x01, 0x00]])
        let read2 = m.read(key)
        let (second, _) = try #require(read2)
        #expect({ if case .sdu([2]) = second { true } else { false } }())
    }

    @Test func kFramesWithoutCreditsOrAboveOurLimitsCloseTheChannel() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        // A K-frame of 31 bytes exceeds our MPS 30.
        let actions = m.receive(handle: handle, cid: key.localCID, [0x1D, 0x00] + Array(repeating: 0, count: 29))
        // Disconnection Request: DCID 0x0045 (theirs), SCID 0x0040 (ours).
        #expect(sent(actions).map { [$0[0]] + Array($0.dropFirst(4)) } == [[0x06, 0x45, 0x00, 0x40, 0x00]])
        #expect(actions.contains { if case .closed(key, let e?, false) = $0 { e.code == .malformedL2CAPPacket } else { false } })
        let after = m.receive(handle: handle, cid: key.localCID, [0x00, 0x00])
        #expect(after.contains {
            if case .dropped = $0 { true } else { false }
        })
    }

    @Test func tooManyCreditsCloseTheChannel() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        // Flow Control Credit for CID 0x0045 (the peer's), 0xFFFF credits on top of 2.
        let actions = m.receive(handle: handle, cid: 5, [0x16, 0x07, 0x04, 0x00, 0x45, 0x00, 0xFF, 0xFF])
        #expect(actions.contains { if case .closed(key, _, _) = $0 { true } else { false } })
    }

    @Test func creditsWakeWriters() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        let credits = [m.takeCredit(key), m.takeCredit(key), m.takeCredit(key)]
        #expect(credits == [true, true, false])
        let actions = m.receive(handle: handle, cid: 5, [0x16, 0x07, 0x04, 0x00, 0x45, 0x00, 0x01, 0x00])
        #expect(actions.contains { if case .wakeWriters(key) = $0 { true } else { false } })
        let credit = m.takeCredit(key)
        #expect(credit)
    }

    @Test func thePeersDisconnectionClosesCleanlyAndUnknownCIDsAreRejected() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        _ = m.read(key)
        // Disconnection Request, identifier 9, DCID 0x0040 (ours), SCID 0x0045.
        let actions = m.receive(handle: handle, cid: 5, [0x06, 0x09, 0x04, 0x00, 0x40, 0x00, 0x45, 0x00])
        #expect(sent(actions) == [[0x07, 0x09, 0x04, 0x00, 0x40, 0x00, 0x45, 0x00]])
        #expect(actions.contains { if case .closed(key, nil, true) = $0 { true } else { false } })
        // The same request again names a channel that is gone: Command Reject, invalid CID (0x0002).
        let again = m.receive(handle: handle, cid: 5, [0x06, 0x0A, 0x04, 0x00, 0x41, 0x00, 0x45, 0x00])
        #expect(sent(again) == [[0x01, 0x0A, 0x06, 0x00, 0x02, 0x00, 0x45, 0x00, 0x41, 0x00]])
    }

    @Test func malformedAndUnknownSignalsAreRejected() throws {
        var m = machine()
        // Truncated LE Credit Based Connection Request (length 10, 1 byte present): Command Reject, not understood.
        let truncated = m.receive(handle: handle, cid: 5, [0x14, 0x07, 0x0A, 0x00, 0x81])
        #expect(sent(truncated) == [[0x01, 0x07, 0x02, 0x00, 0x00, 0x00]])
        // An unknown code 0x7F: Command Reject, not understood.
        let unknown = m.receive(handle: handle, cid: 5, [0x7F, 0x08, 0x00, 0x00])
        #expect(sent(unknown) == [[0x01, 0x08, 0x02, 0x00, 0x00, 0x00]])
        // Connection Parameter Update Request: rejected (result 0x0001).
        let update = m.receive(
            handle: handle, cid: 5, [0x12, 0x0B, 0x08, 0x00, 0x06, 0x00, 0x0C, 0x00, 0x00, 0x00, 0xC8, 0x00])
        #expect(sent(update) == [[0x13, 0x0B, 0x02, 0x00, 0x01, 0x00]])
    }

    @Test func theEndOfAConnectionClosesItsChannelsAndFailsItsOpens() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        let (id, _) = try m.open(handle: handle, psm: 0x0080)
        let actions = m.connectionEnded(handle, NearbyError(.endpointIoError, "ended"))
        #expect(actions.contains { if case .closed(key, let e?, false) = $0 { e.code == .endpointIoError } else { false } })
        #expect(actions.contains { if case .openFailed(id, _) = $0 { true } else { false } })
        let read = m.read(key)
        let (outcome, _) = try #require(read)
        #expect({ if case .closed(let e?) = outcome { e.code == .endpointIoError } else { false } }())
        let gone = m.read(key)
        #expect(gone == nil)
    }

    @Test func closingLocallySendsADisconnectionRequestAndForgetsAnIdleChannel() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        let actions = m.closeLocally(key)
        #expect(sent(actions).map { $0[0] } == [0x06])
        #expect(m.channel(key) == nil)
        let again = m.closeLocally(key)
        #expect(again.isEmpty)
    }

    /// The peer's request for PSM 0x0081 from its CID `scid` (identifier `id`).
    private func request(id: UInt8, scid: UInt8) -> [UInt8] {
        [0x14, id, 0x0A, 0x00, 0x81, 0x00, scid, 0x00, 0x00, 0x02, 0x40, 0x00, 0x02, 0x00]
    }

    private func result(_ actions: [L2CAPSignalling.Action]) -> UInt16? {
        sent(actions).first { $0[0] == 0x15 }.map { UInt16($0[12]) | UInt16($0[13]) << 8 }
    }

    /// A stranger opens a channel and closes it while our reader waits (or garbage makes us close it with an
    /// error): once the owner closes its side, the peer may use the same CID again, and so may we.
    @Test func aChannelThePeerClosedIsForgottenWhenItsOwnerClosesIt() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        #expect(m.read(key).map { if case .wait = $0.0 { true } else { false } } == true)
        // Disconnection Request, identifier 4, DCID (ours) 0x0040, SCID 0x0045: the waiting reader gets the end.
        let closed = m.receive(handle: handle, cid: 5, [0x06, 0x04, 0x04, 0x00, 0x40, 0x00, 0x45, 0x00])
        #expect(closed.contains { if case .closed(key, nil, true) = $0 { true } else { false } })
        // The peer reuses its CID 0x0045 at once: the closed channel does not block it.
        let second = m.receive(handle: handle, cid: 5, request(id: 5, scid: 0x45))
        #expect(result(second) == 0)
        let secondKey = try #require(second.compactMap { if case .accepted(_, let info) = $0 { info.key } else { nil } }.first)
        // The first channel's owner closes it: nothing goes out, and it is gone.
        #expect(sent(m.closeLocally(key)).isEmpty)
        #expect(m.channel(key) == nil)
        // Garbage on the second channel (a K-frame whose SDU length exceeds our MTU) closes it with an error.
        let garbage = m.receive(handle: handle, cid: secondKey.localCID, [0xFF, 0xFF, 1, 2])
        #expect(garbage.contains { if case .closed(secondKey, _?, _) = $0 { true } else { false } })
        _ = m.closeLocally(secondKey)
        #expect(m.channel(secondKey) == nil)
        let third = m.receive(handle: handle, cid: 5, request(id: 6, scid: 0x45))
        #expect(result(third) == 0)
        #expect(third.contains { if case .accepted(_, let info) = $0 { info.key.localCID == 0x40 } else { false } })
    }

    /// The link dropped under a channel and the controller gives the next connection the same handle: its
    /// requests are accepted although the old channel's owner has not closed it yet.
    @Test func aChannelOfALostLinkDoesNotBlockTheNextConnectionOnTheSameHandle() throws {
        var m = machine()
        let key = try acceptedChannel(&m)
        _ = m.read(key)
        _ = m.connectionEnded(handle, NearbyError(.endpointIoError, "link lost"))
        let next = m.receive(handle: handle, cid: 5, request(id: 1, scid: 0x45))
        #expect(result(next) == 0)
        _ = m.closeLocally(key)
        #expect(m.channel(key) == nil)
    }

    @Test func dynamicPSMsSkipTakenOnes() throws {
        var m = machine()
        let fixed = try m.listen(psm: 0x80)
        let dynamic = try m.listen(psm: nil)
        #expect([fixed, dynamic] == [0x80, 0x81])
        do {
            _ = try m.listen(psm: 0x81)
            Issue.record("PSM 0x81 was given twice")
        } catch {
            #expect((error as? NearbyError)?.code == .invalidArgument)
        }
    }
}
