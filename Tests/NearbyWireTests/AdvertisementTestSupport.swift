import NearbyWire
import Testing

/// Parses a hex string such as `"23 41 fc"` (spaces ignored) into bytes.
func advertisementTestBytes(hex: String) -> [UInt8] {
    let digits = Array(hex.filter { !$0.isWhitespace })
    precondition(digits.count % 2 == 0, "odd number of hex digits")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// Runs `body` and checks that it either returns or throws a `NearbyError` with `code`.
///
/// Returns the value, or `nil` when it threw. Records an issue for any other error.
func decodeOrExpectNearbyError<T>(
    _ code: NearbyError.Code,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> T
) -> T? {
    do {
        return try body()
    } catch let error as NearbyError {
        if error.code != code {
            Issue.record("expected NearbyError code \(code), got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    } catch {
        Issue.record("expected a NearbyError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Checks that `body` throws a `NearbyError` with `code`.
func expectNearbyError(
    _ code: NearbyError.Code,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected NearbyError code \(code), but nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as NearbyError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected a NearbyError, got \(error)", sourceLocation: sourceLocation)
    }
}
