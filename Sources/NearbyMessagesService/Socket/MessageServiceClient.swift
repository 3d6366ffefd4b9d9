import Foundation
import NIOCore
import NIOPosix
import NearbyCore
import NearbyWire

/// A connection to a running service (`nearby service`): send requests, read the events of its subscriptions.
/// This is the protocol level; ``ServiceMessageManager`` is the `MessageManager`-like API built on it.
///
/// ```swift
/// let client = try await MessageServiceClient.connect(socketPath: ServicePaths.defaultSocket)
/// let reply = try await client.send(ServiceRequest(id: 0, op: .subscribe, serviceID: "com.example"))
/// for await event in client.events { print(event.event, event.message) }
/// ```
///
/// What the connection made without `background` stops when it closes.
public final class MessageServiceClient: Sendable {
    /// The found/lost events the service sends on this connection, for one consumer; the stream ends when the
    /// connection closes, and ``disconnection`` then says why.
    public let events: AsyncStream<ServiceEvent>

    private let outgoing: AsyncStream<String>.Continuation
    private let eventSink: AsyncStream<ServiceEvent>.Continuation
    private let state = LockedValue(State())
    private let connection = LockedValue<Task<Void, Never>?>(nil)

    private struct State {
        var nextID = 1
        var waiting: [Int: HandoffResumer<ServiceResponse>] = [:]
        var closed: NearbyError?
        /// ``close()`` was called.
        var closing = false
    }

    /// Why the connection ended: `nil` while it is open; `.endpointIoError` when the service closed it (it stopped,
    /// or dropped this client for not reading) or it failed; `.outOfOrderApiCall` after ``close()``.
    public var disconnection: NearbyError? { state.withLock { $0.closed } }

    private let lines: AsyncStream<String>

    private init() {
        (lines, outgoing) = AsyncStream<String>.makeStream()
        (events, eventSink) = AsyncStream<ServiceEvent>.makeStream()
    }

    /// Connects to the service listening on `socketPath`.
    /// - Throws: `NearbyError` `.mediumUnavailable` when nothing listens there.
    public static func connect(
        socketPath: URL, group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(NearbyError) -> MessageServiceClient {
        let channel: NIOAsyncChannel<[UInt8], ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: group).connect(unixDomainSocketPath: socketPath.path) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(JSONLineDecoder()))
                    return try NIOAsyncChannel<[UInt8], ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        } catch {
            throw NearbyError(
                .mediumUnavailable, "no nearby service answers on \(socketPath.path) (start it with `nearby service`)",
                cause: error)
        }
        let client = MessageServiceClient()
        // Owner: this client; `close()` cancels and awaits it (it ends when the connection closes).
        let running = Task { await client.run(channel) }
        client.connection.withLock { $0 = running }
        return client
    }

    /// Sends `request` (its `id` is replaced by one of this connection's) and waits for the response.
    /// - Throws: `NearbyError` `.endpointIoError` when the connection closed first (``disconnection``), or
    ///   `.outOfOrderApiCall` after ``close()``.
    public func send(_ request: ServiceRequest) async throws(NearbyError) -> ServiceResponse {
        var request = request
        do {
            return try await withHandoffContinuation { continuation in
                let id = state.withLock { state -> Result<Int, NearbyError> in
                    if let closed = state.closed { return .failure(closed) }
                    defer { state.nextID += 1 }
                    state.waiting[state.nextID] = continuation
                    return .success(state.nextID)
                }
                switch id {
                case .failure(let failure):
                    continuation.resume(throwing: failure)
                case .success(let id):
                    request.id = id
                    do {
                        outgoing.yield(try ServiceCodec.encode(request) + "\n")
                    } catch {
                        let waiting = state.withLock { $0.waiting.removeValue(forKey: id) }
                        waiting?.resume(throwing: NearbyError(.invalidArgument, "cannot encode the request: \(error)"))
                    }
                }
            }
        } catch {
            throw (error as? NearbyError) ?? NearbyError(.endpointIoError, "\(error)")
        }
    }

    /// Closes the connection; waits until it is closed.
    public func close() async {
        state.withLock { $0.closing = true }
        outgoing.finish()
        let task = connection.withLock { $0 }
        task?.cancel()
        await task?.value
    }

    private func run(_ channel: NIOAsyncChannel<[UInt8], ByteBuffer>) async {
        let lines = self.lines
        var failure = NearbyError(.endpointIoError, "the service closed the connection")
        do {
            try await channel.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await line in lines { try await outbound.write(ByteBuffer(string: line)) }
                    }
                    group.addTask {
                        for try await line in inbound { self.receive(line) }
                    }
                    _ = try await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            failure = (error as? NearbyError) ?? NearbyError(.endpointIoError, "the connection to the service failed", cause: error)
        }
        let waiting = state.withLock { state in
            if state.closing { failure = NearbyError(.outOfOrderApiCall, "the connection to the service was closed by its client") }
            state.closed = failure
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for continuation in waiting { continuation.resume(throwing: failure) }
        eventSink.finish()
        outgoing.finish()
    }

    private func receive(_ line: [UInt8]) {
        switch try? ServiceCodec.decodeReply(from: line) {
        case .event(let event):
            eventSink.yield(event)
        case .response(let response):
            guard let id = response.id else { return }
            state.withLock { $0.waiting.removeValue(forKey: id) }?.resume(returning: response)
        case nil:
            break
        }
    }
}
