import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

/// A file that fails on the receiving side (found by the fault soak with a full disk).
struct EngineLocalFailureTests {
    @Test("A file whose folder cannot be created ends with one failure update and no progress after it", .timeLimit(.minutes(5)))
    func noProgressAfterLocalFailure() async throws {
        let pair = EnginePair()
        _ = try await pair.connect()
        // A regular file where the payload's parent folder should go: creating the folder fails.
        try Data("not a folder".utf8).write(to: pair.receiveDirectory.appendingPathComponent("blocked"))
        let source = pair.receiveDirectory.appendingPathComponent("source.bin")
        try Data(count: 100_000).write(to: source)
        try await pair.discoverer.send(.file(source, name: "copy.bin", parentFolder: "blocked"), to: "ADVR", id: 31)
        _ = try await pair.advertiserLog.wait {
            if case .endpoint(.transferUpdate(_, let u, false)) = $0 { u.payloadID == 31 && u.status == .failure } else { false }
        }
        // Frames are handled, and events emitted, in order: once a later payload arrived, every update of the
        // failed one is in the log.
        try await pair.discoverer.send(.bytes([1, 2, 3]), to: "ADVR", id: 32)
        _ = try await pair.advertiserLog.wait { if case .endpoint(.bytesReceived(_, 32, _)) = $0 { true } else { false } }
        let updates = await pair.advertiserLog.updates(31, outgoing: false)
        let failure = try #require(updates.firstIndex { $0.status == .failure })
        #expect(updates[(failure + 1)...].isEmpty, "updates after the failure: \(updates[(failure + 1)...])")
        #expect(updates.filter { $0.status != .inProgress }.count == 1)
    }
}
