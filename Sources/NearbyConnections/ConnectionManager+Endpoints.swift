import Foundation
import NearbyCore

/// What a send to several endpoints started: ``ConnectionManager/send(_:toEach:id:)`` and
/// ``ConnectionManager/sendResource(at:withName:toEach:id:)``.
public struct MultiSendResult: Sendable {
    /// The payload's ID, the same on every connection.
    public var payloadID: PayloadID
    /// The endpoints the payload is on its way to, in the order asked for; each reports progress and the outcome
    /// in its own `.transferUpdate` events.
    public var started: [EndpointID]
    /// Why each of the other endpoints could not take it (for example `.endpointUnknown`: not connected).
    public var failures: [EndpointID: NearbyError]
}

extension ConnectionManager {
    /// The endpoints connected now: both sides accepted and the connection has not ended. Sorted, each once.
    ///
    /// Pending connections (handshake or decision under way) are not included. Follow changes through
    /// ``events`` (`.stateChanged`).
    public var connectedEndpoints: [EndpointID] {
        get async { await engine.connectedEndpoints() }
    }

    /// How many connections the engine holds open, pending, connected or closing (tests check none leak).
    package var openConnectionCount: Int {
        get async { await engine.openSessionCount }
    }

    /// Sends the same bytes (at most 1,047,552), under one payload ID, to each of `endpointIDs`; returns once the
    /// transfers have started.
    ///
    /// Each endpoint gets the payload over its own connection, independently: an endpoint that is not connected,
    /// or whose connection breaks, does not hold up the others. Outcomes are per endpoint: the result lists the
    /// endpoints that could not take the payload (each also gets a `.failure` transfer update, as Google reports
    /// it), and each endpoint that took it reports its progress and outcome in its own `.transferUpdate` events.
    /// ``cancel(_:)`` with the ID cancels it on every connection. Endpoints listed twice get it once.
    ///
    /// Google's Swift API has the callback form `send(_:to:id:completionHandler:)` (also here); this async form
    /// takes `toEach:` so that Google-shaped calls without a handler still resolve to the callback form inside
    /// `async` code.
    ///
    /// - Throws: `NearbyError`: `.invalidArgument` for an empty list; when no endpoint could take the payload,
    ///   the first endpoint's error (`.endpointUnknown` when none is connected, as Google's `kEndpointUnknown`).
    @discardableResult
    public func send(_ data: Data, toEach endpointIDs: [EndpointID], id: PayloadID = .unique()) async throws
        -> MultiSendResult
    {
        try await start(.bytes(Array(data)), toEach: endpointIDs, id: id)
    }

    /// Sends the same file, under one payload ID, to each of `endpointIDs`; the peers see `name` (a last path
    /// component, optionally after folders: `photos/a.jpg`). Per-endpoint semantics as ``send(_:toEach:id:)``.
    ///
    /// - Throws: `NearbyError` as ``send(_:toEach:id:)``.
    @discardableResult
    public func sendResource(
        at url: URL, withName name: String, toEach endpointIDs: [EndpointID], id: PayloadID = .unique()
    ) async throws -> MultiSendResult {
        let (fileName, folder) = Self.split(name)
        return try await start(.file(url, name: fileName, parentFolder: folder), toEach: endpointIDs, id: id)
    }

    /// Starts `source` to each endpoint; throws when none could take it.
    func start(_ source: OutgoingPayloadSource, toEach endpointIDs: [EndpointID], id: PayloadID) async throws
        -> MultiSendResult
    {
        guard !endpointIDs.isEmpty else { throw NearbyError(.invalidArgument, "no endpoints to send to") }
        let failures = await engine.send(source, toEach: endpointIDs, id: id)
        var seen = Set<EndpointID>()
        let unique = endpointIDs.filter { seen.insert($0).inserted }
        let started = unique.filter { failures[$0] == nil }
        if started.isEmpty, let first = unique.first, let error = failures[first] { throw error }
        return MultiSendResult(payloadID: id, started: started, failures: failures)
    }
}
