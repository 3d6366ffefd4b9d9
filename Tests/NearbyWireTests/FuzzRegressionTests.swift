import Testing

@testable import NearbyWire

/// Inputs that crashed a libFuzzer target (scripts/fuzz.sh, docs/FUZZING.md), kept so they stay fixed.
@Suite("Fuzz regressions (wire)", .timeLimit(.minutes(5)))
struct FuzzRegressionTests {
    /// offline-frame target, first run: `isRefusedUpgradeAddress` indexed `address[15]` of an empty array and
    /// trapped. An address that is neither 4 nor 16 bytes is now refused instead.
    @Test("An upgrade address of the wrong length is refused, not a crash")
    func refusedUpgradeAddressOfWrongLength() {
        for length in [0, 1, 3, 5, 15, 17, 64] {
            #expect(OfflineFrameValidator.isRefusedUpgradeAddress([UInt8](repeating: 0, count: length)))
        }
        #expect(!OfflineFrameValidator.isRefusedUpgradeAddress([192, 168, 1, 2]))
        #expect(OfflineFrameValidator.isRefusedUpgradeAddress([127, 0, 0, 1]))
    }
}
