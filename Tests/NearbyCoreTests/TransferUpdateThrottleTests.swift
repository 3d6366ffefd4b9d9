import Foundation
import NearbyCore
import NearbyTesting
import Testing

/// FILE progress is thinned out to one update per 50 ms per payload (as Google's payload manager does); the first
/// update and every terminal one always arrive.
struct TransferUpdateThrottleTests {
    private static func update(_ id: PayloadID, _ kind: PayloadKind = .file, _ status: TransferStatus = .inProgress, bytes: Int64)
        -> PayloadTransferUpdate
    {
        PayloadTransferUpdate(payloadID: id, kind: kind, status: status, bytesTransferred: bytes, totalBytes: 1_000_000)
    }

    @Test("In-progress FILE updates within 50 ms of the last delivered one are dropped; the first and later ones pass", .timeLimit(.minutes(5)))
    func coalescesWithinTheInterval() {
        var throttle = TransferUpdateThrottle()
        let admitted = [
            throttle.admit(Self.update(1, bytes: 100), now: .milliseconds(1000)),
            throttle.admit(Self.update(1, bytes: 200), now: .milliseconds(1001)),
            throttle.admit(Self.update(1, bytes: 300), now: .milliseconds(1049)),
            throttle.admit(Self.update(1, bytes: 400), now: .milliseconds(1050)),
            throttle.admit(Self.update(1, bytes: 500), now: .milliseconds(1060)),
            throttle.admit(Self.update(1, bytes: 600), now: .milliseconds(1200)),
            // Another payload has its own interval: its first update passes at once.
            throttle.admit(Self.update(2, bytes: 100), now: .milliseconds(1201)),
            throttle.admit(Self.update(2, bytes: 200), now: .milliseconds(1202)),
        ]
        #expect(admitted == [true, false, false, true, false, true, true, false])
    }

    @Test("Terminal updates always pass, right after an in-progress one, and forget the payload", .timeLimit(.minutes(5)), arguments: [
        TransferStatus.success, .failure, .canceled,
    ])
    func terminalUpdatesAlwaysPass(_ status: TransferStatus) {
        var throttle = TransferUpdateThrottle()
        let admitted = [
            throttle.admit(Self.update(1, bytes: 100), now: .milliseconds(5)),
            throttle.admit(Self.update(1, .file, status, bytes: 1_000_000), now: .milliseconds(6)),
        ]
        #expect(admitted == [true, true])
        #expect(throttle.trackedPayloadCount == 0)
        // A terminal update with no progress before it passes too.
        let alone = throttle.admit(Self.update(3, .file, status, bytes: 0), now: .milliseconds(6))
        #expect(alone)
    }

    @Test("BYTES and STREAM updates are never held back", .timeLimit(.minutes(5)), arguments: [PayloadKind.bytes, .stream])
    func otherKindsPass(_ kind: PayloadKind) {
        var throttle = TransferUpdateThrottle()
        var admitted: [Bool] = []
        for bytes in Int64(1)...20 {
            admitted.append(throttle.admit(Self.update(1, kind, bytes: bytes), now: .milliseconds(7)))
        }
        #expect(admitted == Array(repeating: true, count: 20))
        #expect(throttle.trackedPayloadCount == 0)
    }

    @Test("With a clock that does not move, a 5-chunk file reports its first chunk and its success on both sides", .timeLimit(.minutes(5)))
    func engineCoalescesOnBothSides() async throws {
        let clock = ManualClock()
        let pair = EnginePair(clock: clock)
        _ = try await pair.connect()
        let chunk = MediumKind.wifiLAN.maxTransmitPacketSize
        let source = pair.receiveDirectory.appendingPathComponent("five-chunks.bin")
        try Data(repeating: 5, count: 5 * chunk).write(to: source)
        try await pair.discoverer.send(.file(source, name: "five.bin", parentFolder: ""), to: "ADVR", id: 51)
        for (log, outgoing) in [(pair.discovererLog, true), (pair.advertiserLog, false)] {
            _ = try await log.wait {
                if case .endpoint(.transferUpdate(_, let u, outgoing)) = $0 { u.payloadID == 51 && isFinal(u.status) } else { false }
            }
            let updates = await log.updates(51, outgoing: outgoing)
            #expect(updates.map(\.status) == [.inProgress, .success], "outgoing: \(outgoing)")
            #expect(updates.map(\.bytesTransferred) == [Int64(chunk), Int64(5 * chunk)], "outgoing: \(outgoing)")
        }
    }

    @Test("A canceled file reports canceled on both sides although its progress is held back", .timeLimit(.minutes(5)), arguments: [true, false])
    func cancelArrivesWhileThrottled(bySender: Bool) async throws {
        let clock = ManualClock()
        let pair = EnginePair(clock: clock)
        _ = try await pair.connect()
        let source = pair.receiveDirectory.appendingPathComponent("big.bin")
        try Data(count: 20_000_000).write(to: source)
        try await pair.discoverer.send(.file(source, name: "big-copy.bin", parentFolder: ""), to: "ADVR", id: 52)
        _ = try await pair.advertiserLog.wait {
            if case .endpoint(.transferUpdate(_, let u, false)) = $0 { u.payloadID == 52 && u.status == .inProgress } else { false }
        }
        #expect(await (bySender ? pair.discoverer : pair.advertiser).cancelPayload(52))
        for (log, outgoing) in [(pair.discovererLog, true), (pair.advertiserLog, false)] {
            _ = try await log.wait {
                if case .endpoint(.transferUpdate(_, let u, outgoing)) = $0 { u.payloadID == 52 && isFinal(u.status) } else { false }
            }
            // The sender's first update may race with the cancel; at most that one comes before the outcome.
            let updates = await log.updates(52, outgoing: outgoing)
            #expect(updates.last?.status == .canceled, "outgoing: \(outgoing)")
            #expect(updates.dropLast().allSatisfy { $0.status == .inProgress }, "outgoing: \(outgoing)")
            // The receiver saw its first update before the cancel; nothing more within the frozen 50 ms.
            #expect(outgoing ? updates.count <= 2 : updates.count == 2, "outgoing: \(outgoing)")
        }
    }
}
