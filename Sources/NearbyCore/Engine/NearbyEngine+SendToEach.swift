import NearbyWire

extension NearbyEngine {
    /// Sends one payload, under one ID, to each of `endpointIDs` (Google's `SendPayload` to several endpoints).
    ///
    /// Each endpoint gets the payload over its own connection, independently of the others: one endpoint that is
    /// not connected, or whose connection breaks, does not stop or slow the rest. Endpoints listed twice get it once.
    ///
    /// - Returns: why each endpoint that could not take the payload could not, keyed by endpoint ID (empty when
    ///   every endpoint took it). When at least one endpoint took it, each endpoint that could not also gets a
    ///   `.failure` transfer update for the payload in ``events``, as Google reports it; when none took it,
    ///   nothing is reported (the caller fails the whole call).
    package func send(
        _ source: OutgoingPayloadSource, toEach endpointIDs: [String], id: PayloadID
    ) async -> [String: NearbyError] {
        var seen = Set<String>()
        let unique = endpointIDs.filter { seen.insert($0).inserted }
        var failures: [String: NearbyError] = [:]
        if case .stream = source, unique.count > 1 {
            let error = NearbyError(.invalidArgument, "a stream can be sent to one endpoint only")
            for endpoint in unique { failures[endpoint] = error }
            return failures
        }
        for endpoint in unique {
            do {
                try await send(source, to: endpoint, id: id)
            } catch {
                failures[endpoint] = (error as? NearbyError)
                    ?? NearbyError(.endpointIoError, "sending to \(endpoint) failed", cause: error)
            }
        }
        if failures.count < unique.count {
            for endpoint in unique where failures[endpoint] != nil {
                let update = PayloadTransferUpdate(
                    payloadID: id, kind: source.kind, status: .failure, bytesTransferred: 0, totalBytes: 0)
                emit(.endpoint(.transferUpdate(endpointID: endpoint, update: update, isOutgoing: true)))
            }
        }
        return failures
    }
}
