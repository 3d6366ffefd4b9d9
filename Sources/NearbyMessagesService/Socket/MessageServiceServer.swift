import Foundation
import Logging
import NIOCore
import NIOPosix
import NearbyCore
import NearbyWire

#if canImport(Glibc)
import Glibc
#endif

/// Serves a ``MessageService`` on a Unix socket, one JSON object per line each way (`docs/MESSAGES-SERVICE.md`).
///
/// Every connection is a client of the service: its requests are answered in order, and the events of its
/// subscriptions (and of those it watches) are written between the responses. Connections run on NIO's event loop
/// and as tasks, not threads. Nothing the service does waits for a client: what a client is sent is queued for it,
/// and a client that stops reading is disconnected (and logged) once more than its output limit (``defaultOutputLimit``
/// unless ``bind(socketPath:service:outputLimit:logger:group:)`` says otherwise) waits for it, while the others go
/// on. A line that is not a request gets an error response and the connection goes on.
public final class MessageServiceServer: Sendable {
    /// The most bytes waiting to be written to one client (beyond what the socket itself buffers) before it is
    /// disconnected: 4 MiB, room for several of the largest events.
    public static let defaultOutputLimit = 4 * 1024 * 1024

    /// The socket's path.
    public let socketPath: URL
    private let listener: NIOAsyncChannel<NIOAsyncChannel<[UInt8], ByteBuffer>, Never>
    private let service: MessageService
    private let outputLimit: Int
    private let logger: Logger
    private let connections = LockedValue<[ObjectIdentifier: any Channel]>([:])

    private init(
        socketPath: URL, listener: NIOAsyncChannel<NIOAsyncChannel<[UInt8], ByteBuffer>, Never>, service: MessageService,
        outputLimit: Int, logger: Logger
    ) {
        self.socketPath = socketPath
        self.listener = listener
        self.service = service
        self.outputLimit = outputLimit
        self.logger = logger
    }

    /// Listens on `socketPath` (its directory is made with mode 0700, the socket gets mode 0600). A stale socket
    /// file (nobody answers on it) is replaced.
    ///
    /// The directory must be this user's and writable by nobody else, in a chain of directories only this user or
    /// root can change: a directory another local user made first (say `/tmp/nearby-UID`
    /// with mode 0777) is refused, since that user could swap the socket. Connections from other users are closed
    /// at once (`SO_PEERCRED`), whatever the socket's mode.
    ///
    /// - Parameters:
    ///   - socketPath: Where to listen.
    ///   - service: The service the connections are clients of.
    ///   - outputLimit: The most bytes that may wait to be written to one client before it is disconnected
    ///     (``defaultOutputLimit``; at least one line of ``ServiceCodec/maximumLineLength`` is always accepted).
    ///   - logger: The logger.
    ///   - group: The event loops.
    /// - Throws: `NearbyError` `.invalidArgument` when another service answers on the path, the path is not a
    ///   socket, its directory is not safe (see above), or it cannot be bound.
    public static func bind(
        socketPath: URL, service: MessageService, outputLimit: Int = defaultOutputLimit,
        logger: Logger = Logger(label: "nearby.service"), group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws(NearbyError) -> MessageServiceServer {
        let path = socketPath.path
        do {
            try ServiceSocketDirectory.prepare(socketPath.deletingLastPathComponent())
            try await removeStaleSocket(at: path, group: group)
            let listener = try await ServerBootstrap(group: group)
                .serverChannelOption(ChannelOptions.backlog, value: 64)
                .bind(unixDomainSocketPath: path) { child in
                    child.eventLoop.makeCompletedFuture {
                        try child.pipeline.syncOperations.addHandler(ByteToMessageHandler(JSONLineDecoder()))
                        return try NIOAsyncChannel<[UInt8], ByteBuffer>(wrappingChannelSynchronously: child)
                    }
                }
            chmod(path, 0o600)
            logger.info("listening", metadata: ["socket": "\(path)"])
            return MessageServiceServer(
                socketPath: socketPath, listener: listener, service: service, outputLimit: outputLimit, logger: logger)
        } catch let error as NearbyError {
            throw error
        } catch {
            throw NearbyError(.invalidArgument, "cannot listen on \(path): \(error)", cause: error)
        }
    }

    /// Accepts and serves connections until ``close()``; returns when every connection has ended.
    public func run() async {
        do {
            try await listener.executeThenClose { inbound in
                try await withThrowingDiscardingTaskGroup { group in
                    for try await connection in inbound {
                        group.addTask { await self.serve(connection) }
                    }
                }
            }
        } catch {
            logger.warning("the listener failed", metadata: ["error": "\(error)"])
        }
    }

    /// Stops listening, closes every connection and removes the socket file.
    public func close() async {
        try? await listener.channel.close()
        for channel in connections.withLock({ Array($0.values) }) { channel.close(promise: nil) }
        unlink(socketPath.path)
    }

    /// What ended a connection's first half.
    private enum Ended: Sendable { case reader, writer }

    private func serve(_ connection: NIOAsyncChannel<[UInt8], ByteBuffer>) async {
        let key = ObjectIdentifier(connection.channel)
        let open = connections.withLock { connections in
            connections[key] = connection.channel
            return connections.count
        }
        defer { connections.withLock { $0[key] = nil } }
        if let refusal = await refusal(of: connection.channel, open: open) {
            logger.notice("refusing a client", metadata: ["reason": "\(refusal.message)"])
            try? await connection.executeThenClose { _, outbound in
                let line = try ServiceCodec.encode(ServiceReply.response(.failure(nil, ServiceFailure(
                    code: refusal.code.rawValue, message: refusal.message))))
                try await outbound.write(ByteBuffer(string: line + "\n"))
            }
            return
        }
        let (lines, queue) = AsyncStream<String>.makeStream()
        let output = ClientOutput(limit: outputLimit)
        defer { output.close() }
        let logger = self.logger
        let channel = connection.channel
        let clientName = LockedValue("client")
        // Called by the service (for events) and by the reader (for responses); never waits for the client.
        let enqueue: @Sendable (ServiceReply) -> Void = { reply in
            guard let line = try? ServiceCodec.encode(reply) else { return }
            let kind: ClientOutput.Kind
            if case .response = reply { kind = .response } else { kind = .event }
            switch output.add(line.utf8.count + 1, kind: kind) {
            case .queued:
                queue.yield(line + "\n")
            case .overflowed(let waiting):
                logger.warning(
                    "a client does not read what it is sent; disconnecting it",
                    metadata: ["client": "\(clientName.withLock { $0 })", "waiting_bytes": "\(waiting)"])
                queue.finish()
                output.close()
                channel.close(promise: nil)
            case .closed:
                break
            }
        }
        let client = await service.connect(
            { enqueue(.event($0)) }, waitForRoom: { await output.waitForRoom(atMost: ClientOutput.roomWait) })
        clientName.withLock { $0 = "\(client)" }
        let service = self.service
        do {
            try await connection.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Ended.self) { group in
                    group.addTask {
                        defer { queue.finish() }
                        for try await line in inbound {
                            // A client that sends requests without reading the responses is held back here.
                            await output.waitForRoom()
                            let response: ServiceResponse
                            do throws(NearbyError) {
                                let request = try ServiceCodec.decode(ServiceRequest.self, from: line)
                                response = await service.handle(request, from: client)
                            } catch {
                                response = .failure(
                                    Self.requestID(in: line), ServiceFailure(code: error.code.rawValue, message: error.message))
                            }
                            enqueue(.response(response))
                        }
                        return .reader
                    }
                    group.addTask {
                        for await line in lines {
                            try await outbound.write(ByteBuffer(string: line))
                            output.written(line.utf8.count)
                        }
                        return .writer
                    }
                    // The writer ends after the reader (which finishes the queue), or first when the client was
                    // disconnected for not reading: then the reader is cancelled too.
                    if try await group.next() == .writer { group.cancelAll() }
                    try await group.waitForAll()
                }
            }
        } catch {
            logger.debug("connection ended", metadata: ["client": "\(client)", "error": "\(error)"])
        }
        queue.finish()
        await service.disconnect(client)
    }

    /// Why a new connection is not served: another user's, or one too many (``ServiceLimits/maxClients``).
    private func refusal(of channel: any Channel, open: Int) async -> NearbyError? {
        let (same, uid) = await PeerCredentials.isSameUser(channel)
        if !same {
            return NearbyError(
                .authenticationFailed, "the service serves only its own user (uid \(geteuid())), not uid \(uid.map { "\($0)" } ?? "unknown")")
        }
        let limit = service.limits.maxClients
        if open > limit {
            return NearbyError(.limitExceeded, "the service has \(limit) clients, its limit")
        }
        return nil
    }

    /// The `id` of a line that is not a valid request, when it has one, so the client can match the error.
    static func requestID(in line: [UInt8]) -> Int? {
        struct Probe: Decodable { var id: Int? }
        return (try? JSONDecoder().decode(Probe.self, from: Data(line)))?.id
    }

    /// Removes the socket file at `path` when nobody answers on it.
    private static func removeStaleSocket(at path: String, group: any EventLoopGroup) async throws {
        var status = stat()
        guard lstat(path, &status) == 0 else { return }
        guard status.st_mode & S_IFMT == S_IFSOCK else {
            throw NearbyError(.invalidArgument, "\(path) exists and is not a socket")
        }
        if let probe = try? await ClientBootstrap(group: group).connect(unixDomainSocketPath: path).get() {
            try? await probe.close()
            throw NearbyError(.invalidArgument, "a service is already listening on \(path)")
        }
        unlink(path)
    }
}
