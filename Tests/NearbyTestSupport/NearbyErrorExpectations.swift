import NearbyWire

/// Runs `body`; returns its value, or `nil` when it threw a `NearbyError` whose code is one of `codes`.
/// Any other outcome is reported through `report` (pass `Issue.record` from swift-testing).
public func decodeOrNearbyError<T>(
    _ codes: Set<NearbyError.Code>, report: (String) -> Void, _ body: () throws -> T
) -> T? {
    do {
        return try body()
    } catch let error as NearbyError {
        if !codes.contains(error.code) {
            report("expected a NearbyError with code in \(codes.map(\.rawValue).sorted()), got \(error)")
        }
        return nil
    } catch {
        report("expected a NearbyError, got \(error)")
        return nil
    }
}
