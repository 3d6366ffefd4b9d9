import Dispatch
import Testing

import NearbyCore

/// `withHandoffContinuation`: results built on a dispatch queue reach the awaiting task, errors are thrown, and
/// only the first resume counts. Under TSan (scripts/sanitize.sh thread) the array built on the queue and read here
/// must raise no report, whether the resume lands before or after the task suspends.
@Suite("Handoff continuation", .timeLimit(.minutes(5)))
struct HandoffContinuationTests {
    @Test("an array built on a queue arrives whole, resumed both before and after the suspension", arguments: [false, true])
    func arrayFromQueue(resumeLater: Bool) async throws {
        let queue = DispatchQueue(label: "handoff-test")
        for round in 0..<200 {
            let values: [String] = try await withHandoffContinuation { resumer in
                let work: @Sendable () -> Void = {
                    resumer.resume(returning: (0..<8).map { "value \(round).\($0)" })
                }
                if resumeLater { queue.asyncAfter(deadline: .now() + .microseconds(50), execute: work) } else { queue.async(execute: work) }
            }
            #expect(values.count == 8)
            #expect(values.last == "value \(round).7")
        }
    }

    @Test("an error is thrown; a second resume is ignored")
    func errorAndSecondResume() async throws {
        struct Boom: Error {}
        await #expect(throws: Boom.self) {
            let _: Int = try await withHandoffContinuation { resumer in
                DispatchQueue.global().async {
                    resumer.resume(throwing: Boom())
                    resumer.resume(returning: 1)
                }
            }
        }
        let value: Int = try await withHandoffContinuation { resumer in
            resumer.resume(returning: 7)
            resumer.resume(throwing: Boom())
        }
        #expect(value == 7)
    }
}
