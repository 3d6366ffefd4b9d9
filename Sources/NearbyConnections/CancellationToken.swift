import NearbyCore

/// Cancels one payload, in either direction.
public final class CancellationToken: Sendable {
    /// The payload this token cancels.
    public let payloadID: PayloadID
    private let engine: NearbyEngine

    init(payloadID: PayloadID, engine: NearbyEngine) {
        self.payloadID = payloadID
        self.engine = engine
    }

    /// Cancels the payload; both sides then see it as canceled.
    public func cancel() async {
        await engine.cancelPayload(payloadID)
    }

    /// Cancels the payload (Google's callback form). The handler gets an error when no such payload is moving.
    public func cancel(completionHandler: (@Sendable ((any Error)?) -> Void)? = nil) {
        let (engine, payloadID) = (self.engine, self.payloadID)
        engine.tasks.spawn {
            let found = await engine.cancelPayload(payloadID)
            completionHandler?(found ? nil : NearbyError(.endpointUnknown, "payload \(payloadID) is not in progress"))
        }
    }
}
