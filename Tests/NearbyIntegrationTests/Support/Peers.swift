import Foundation
import NearbyConnections
import NearbyCore
import NearbyTestSupport

/// Everything a ``ConnectionManager`` reported, kept so tests can wait for an event and later check what never
/// happened. Incoming streams are drained as they arrive, so they never stall the channel.
final class EventLog: Sendable {
    private final class Storage: Sendable {
        let events = LockedValue<[ConnectionEvent]>([])
    }

    private let storage = Storage()
    private let task = LockedValue<Task<Void, Never>?>(nil)

    /// Logs `events`; with `drainStreams`, incoming streams are read (and discarded) as they arrive.
    init(_ events: AsyncStream<ConnectionEvent>, drainStreams: Bool = true) {
        let storage = self.storage
        let consumer = Task {
            for await event in events {
                storage.events.withLock { $0.append(event) }
                if drainStreams, case .streamReceived(_, _, let stream) = event {
                    Task { for try await _ in stream {} }
                }
            }
        }
        task.withLock { $0 = consumer }
    }

    deinit { task.withLock { $0?.cancel() } }

    /// Every event so far.
    var all: [ConnectionEvent] { storage.events.withLock { $0 } }

    /// Waits for the first event `match` maps to a value.
    @discardableResult
    func wait<Value>(
        _ what: String, timeout: Double = 30, _ match: @escaping (ConnectionEvent) -> Value?
    ) async throws -> Value {
        do {
            return try await eventually(within: timeout, what) { all.lazy.compactMap(match).first }
        } catch {
            throw IntegrationFailure("\(error); events so far:\n\(summary)")
        }
    }

    /// Whether any event so far satisfies `predicate`.
    func contains(where predicate: (ConnectionEvent) -> Bool) -> Bool { all.contains(where: predicate) }

    /// The last events, one per line, for failure messages (byte counts only, no payload contents).
    var summary: String {
        all.suffix(20).map { event in
            switch event {
            case .bytesReceived(let id, let payload, let data): "bytesReceived(\(id), \(payload), \(data.count) bytes)"
            default: "\(event)"
            }
        }.joined(separator: "\n")
    }
}

/// One in-process endpoint: a manager on the real Wi-Fi LAN medium (Avahi + TCP) and the log of its events.
struct Peer: Sendable {
    let manager: ConnectionManager
    let log: EventLog

    /// A manager for `serviceID`, tracked by `scratch` (shut down at teardown).
    init(
        _ scratch: Scratch, serviceID: String, receiveDirectory: URL? = nil, keepAlive: KeepAliveSettings = .default,
        limits: ResourceLimits = .init(), drainStreams: Bool = true
    ) throws {
        var options = ConnectionOptions(
            receiveDirectory: try receiveDirectory ?? scratch.directory("received-\(UUID().uuidString.prefix(6))"),
            keepAlive: keepAlive, limits: limits)
        options.logger.logLevel = .warning
        manager = ConnectionManager(serviceID: serviceID, strategy: .pointToPoint, options: options)
        log = EventLog(manager.events, drainStreams: drainStreams)
        scratch.track(manager)
    }

    /// Starts advertising `name`; returns the listening port. The advertiser lives as long as `scratch`.
    @discardableResult
    func advertise(_ name: String, _ scratch: Scratch) async throws -> (advertiser: Advertiser, port: Int) {
        let advertiser = Advertiser(connectionManager: manager)
        scratch.keep(advertiser)
        let sessions = try await advertiser.startAdvertising(using: Data(name.utf8))
        guard let port = sessions.compactMap(\.port).first else {
            throw IntegrationFailure("advertising returned no listening port: \(sessions)")
        }
        if let problem = sessions.compactMap(\.discoverabilityProblem).first {
            throw IntegrationFailure("advertising is not discoverable: \(problem)")
        }
        return (advertiser, port)
    }

    /// Starts discovering through Avahi and waits until the endpoint `wanted` is found.
    @discardableResult
    func discover(_ wanted: EndpointID, _ scratch: Scratch) async throws -> EndpointID {
        let discoverer = Discoverer(connectionManager: manager)
        scratch.keep(discoverer)
        try await discoverer.startDiscovery()
        return try await log.wait("discovery of \(wanted)") { event -> EndpointID? in
            if case .endpointFound(let id, _, _) = event, id == wanted { return id }
            return nil
        }
    }

    /// Discovers `target` (by its endpoint ID) and requests a connection; returns the target's ID.
    func discoverAndRequest(_ target: Peer, as name: String, _ scratch: Scratch) async throws -> EndpointID {
        let discoverer = Discoverer(connectionManager: manager)
        scratch.keep(discoverer)
        try await discoverer.startDiscovery()
        let wanted = target.manager.localEndpointID
        let found = try await log.wait("discovery of \(wanted)") { event -> EndpointID? in
            if case .endpointFound(let id, _, _) = event, id == wanted { return id }
            return nil
        }
        try await discoverer.requestConnection(to: found, using: Data(name.utf8))
        return found
    }

    /// Waits for the next connection request and answers it; returns the peer's ID and the verification code.
    @discardableResult
    func answerRequest(accept: Bool, timeout: Double = 30) async throws -> (id: EndpointID, code: VerificationCode) {
        let (id, code) = try await log.wait("a connection request", timeout: timeout) { event -> (EndpointID, VerificationCode)? in
            if case .connectionRequested(let id, _, let code, _) = event { return (id, code) }
            return nil
        }
        if accept { try await manager.accept(id) } else { try await manager.reject(id) }
        return (id, code)
    }

    /// Waits until the connection with `id` reaches `state`; returns the error it came with.
    @discardableResult
    func waitForState(_ state: ConnectionState, of id: EndpointID, timeout: Double = 30) async throws -> NearbyError? {
        try await log.wait("\(id) to become \(state)", timeout: timeout) { event -> NearbyError?? in
            if case .stateChanged(id, state, let error) = event { return .some(error) }
            return nil
        }
    }

    /// Waits for a transfer update of `payloadID` in the given direction that `match` accepts.
    @discardableResult
    func waitForTransfer(
        _ payloadID: NearbyConnections.PayloadID?, outgoing: Bool, timeout: Double = 30, _ what: String,
        _ match: @escaping (NearbyConnections.TransferUpdate) -> Bool
    ) async throws -> (NearbyConnections.PayloadID, NearbyConnections.TransferUpdate) {
        func probe(_ event: ConnectionEvent) -> (NearbyConnections.PayloadID, NearbyConnections.TransferUpdate)? {
            switch event {
            case .transferUpdate(_, let id, let update, kind: _, isOutgoing: let isOutgoing, bytes: _, total: _):
                if isOutgoing != outgoing { return nil }
                if let payloadID, payloadID != id { return nil }
                guard match(update) else { return nil }
                return (id, update)
            default:
                return nil
            }
        }
        return try await log.wait(what, timeout: timeout, probe)
    }
}

/// Two in-process peers connected through real discovery: `advertiser` accepted `discoverer`'s request.
struct ConnectedPair: Sendable {
    let advertiser: Peer
    let discoverer: Peer
    /// The discoverer's ID as the advertiser knows it.
    let discovererID: EndpointID
    /// The advertiser's ID as the discoverer knows it.
    let advertiserID: EndpointID

    /// Has `discoverer` find `advertiser` (already advertising) and connect, both accepting.
    static func connect(advertiser: Peer, discoverer: Peer, _ scratch: Scratch) async throws -> ConnectedPair {
        let advertiserID = try await discoverer.discoverAndRequest(advertiser, as: "good discoverer", scratch)
        async let incoming = advertiser.answerRequest(accept: true)
        let outgoing = try await discoverer.answerRequest(accept: true)
        let (discovererID, incomingCode) = try await incoming
        guard incomingCode == outgoing.code else {
            throw IntegrationFailure("verification codes differ: \(incomingCode) vs \(outgoing.code)")
        }
        try await advertiser.waitForState(.connected, of: discovererID)
        try await discoverer.waitForState(.connected, of: advertiserID)
        return ConnectedPair(
            advertiser: advertiser, discoverer: discoverer, discovererID: discovererID, advertiserID: advertiserID)
    }
}
