import Foundation
@testable import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// A cancel that arrives while a payload's last frames are read or queued: the sender's task has passed its last
/// check, so only `finishSent` can see the cancel. Before a0fcdd8 it parked such a payload to wait for the peer's
/// acknowledgement, which a receiver that canceled never sends: the payload never settled (the soak's `nearby send`
/// hung). The stream source suspends at its end and the send gate holds the last frame, so each interleaving is
/// reached on purpose, not by luck.
struct CancelAtTheEndTests {
    enum Canceller: String, CaseIterable, Sendable {
        case peerCancels, peerFails, weCancel

        var expected: TransferStatus { self == .peerFails ? .failure : .canceled }
    }

    enum Moment: String, CaseIterable, Sendable {
        /// The source is asked for more and answers "the end" only after the cancel.
        case readingTheEnd
        /// The last (empty, flagged) frame waits at a closed send gate when the cancel comes.
        case queueingTheLastFrame
    }

    @Test(
        "A payload canceled while its last frames are read or queued settles instead of waiting for an acknowledgement",
        .timeLimit(.minutes(2)), arguments: Canceller.allCases, Moment.allCases)
    func cancelAtTheEnd(canceller: Canceller, moment: Moment) async throws {
        let harness = SenderHarness()
        let (sender, gate, updates) = (harness.sender, harness.gate, harness.updates)
        sender.awaitAcknowledgements(true)

        let atTheEnd = CompletionSignal()
        let release = CompletionSignal()
        let calls = LockedValue(0)
        let id: PayloadID = 9
        try sender.send(.stream(next: {
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            if call == 1 { return [1, 2, 3] }
            atTheEnd.signal()
            await release.wait()
            return nil
        }), id: id)

        let cancel = {
            switch canceller {
            case .peerCancels: sender.peerControl(id, event: .payloadCanceled)
            case .peerFails: sender.peerControl(id, event: .payloadError)
            case .weCancel: #expect(sender.cancel(id))
            }
        }
        // The task asks for the end only after it queued the first chunk and checked for a cancel.
        await atTheEnd.wait()
        switch moment {
        case .readingTheEnd:
            cancel()
            release.signal()
        case .queueingTheLastFrame:
            gate.close()
            release.signal()
            _ = try await eventually(within: 30, "the last frame at the closed gate") { gate.waiterCount == 1 ? true : nil }
            cancel()
            gate.open()
        }

        let settled = try await eventually(within: 30, "the payload to settle") {
            updates.withLock { all in all.last { $0.status != .inProgress } }
        }
        #expect(settled.status == canceller.expected)
        #expect(settled.bytesTransferred == 3)
        #expect(!sender.isSending(id))
        // Settled once: no success or second outcome follows.
        #expect(updates.withLock { all in all.filter { $0.status != .inProgress }.count } == 1)

        await harness.end()
    }
}
