import ArgumentParser
import Foundation
import NearbyConnections
import NearbyCore
import NearbyWire

/// `nearby send`: connect to one endpoint or several, send payloads in order (to every peer at once), disconnect.
/// With no target it discovers and sends to the one receiver it finds. Several targets mean several outgoing
/// connections, which only `--strategy cluster` allows (Google's topology rules: a star spoke and a point-to-point
/// device hold one).
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Send files, folders, text or standard input to a nearby device.",
        discussion: """
            With no --endpoint, --to-name or --address, it looks for receivers (`nearby receive` on the other \
            machine) and sends to the only one it finds; with several, it asks on a terminal which one, and fails \
            otherwise. A folder is sent as its files with their relative paths; `-` sends standard input as a \
            stream. Several targets (repeated --address, --endpoint, --to-name) need --strategy cluster.
            """)

    @Argument(help: ArgumentHelp("Files or folders to send; - sends standard input as a stream.", valueName: "path"))
    var paths: [String] = []

    @OptionGroup var common: CommonOptions
    @OptionGroup var strategy: StrategyOptions
    @OptionGroup var info: EndpointInfoOptions

    @Option(help: "The endpoint ID to connect to, found by discovery (repeatable).")
    var endpoint: [String] = []

    @Option(
        name: .customLong("to-name"),
        help: "Connect to the endpoint whose name (endpoint info) is this text (repeatable).")
    var toName: [String] = []

    @Option(help: "Connect to HOST:PORT directly, without discovery (repeatable).")
    var address: [String] = []

    @Option(name: .customLong("bytes"), help: "A bytes payload (repeatable).")
    var bytes: [String] = []

    @Option(name: .customLong("file"), help: "A file or folder to send (repeatable).")
    var files: [String] = []

    @Option(help: "Send this file, or - for standard input, as a stream payload (one target only).")
    var stream: String?

    /// Still accepted (scripts pass it); our own request is always accepted now.
    @Flag(help: .hidden)
    var accept = false

    @OptionGroup var transfer: TransferOptions

    @Option(
        name: .customLong("stream-to"),
        help: ArgumentHelp(
            "Write a stream the peer sends back to this file, or - for standard output.", valueName: "path"))
    var streamTo: String?

    @Option(
        name: .customLong("expect-payloads"),
        help: "After sending, stay connected until this many payloads were received (from all peers together).")
    var expectPayloads: Int = 0

    @Option(help: "Seconds to stay connected after the last payload.")
    var linger: Double = 0

    @Option(help: "Give up after this many seconds without a connection.")
    var timeout: Double = 60

    /// Every target, in the order given: addresses first, then endpoint IDs, then names.
    private var targetCount: Int { endpoint.count + toName.count + address.count }

    /// Standard input as a stream: `--stream -` or the path `-`.
    private var streamSource: String? { stream ?? (paths.contains("-") ? "-" : nil) }

    /// The files and folders to send.
    private var filePaths: [String] { files + paths.filter { $0 != "-" } }

    func validate() throws {
        for address in address where Self.parse(address) == nil {
            throw ValidationError("--address must be HOST:PORT, got \(address)")
        }
        if streamSource != nil, targetCount > 1 {
            throw ValidationError("a stream goes to one target only")
        }
        if stream != nil, paths.contains("-") {
            throw ValidationError("give standard input either as - or as --stream -, not both")
        }
        if paths.filter({ $0 == "-" }).count > 1 {
            throw ValidationError("- (standard input) can be given once")
        }
        if expectPayloads < 0 {
            throw ValidationError("--expect-payloads must be 0 or more")
        }
        for path in filePaths + (stream.map { $0 == "-" ? [] : [$0] } ?? []) {
            try Self.checkReadable(path)
        }
        for text in bytes where text.utf8.count > 1_047_552 {
            throw ValidationError("a --bytes payload holds at most 1047552 bytes; use --file")
        }
        if targetCount == 0 && filePaths.isEmpty && bytes.isEmpty && streamSource == nil && expectPayloads == 0 {
            throw ValidationError("nothing to send: give files or folders, - for standard input, --bytes or --stream")
        }
    }

    /// A usage error naming `path` and why it cannot be read.
    static func checkReadable(_ path: String) throws {
        if access(path, R_OK) != 0 {
            throw ValidationError("cannot read \(path): \(ErrorText.reason(errno: errno))")
        }
    }

    func run() async throws {
        let target = streamTo.map(StreamTarget.init(argument:))
        let output = EventOutput(
            json: common.json, quiet: transfer.isQuiet,
            descriptor: target == .standardOutput ? STDERR_FILENO : STDOUT_FILENO)
        let plan = try PayloadPlan(bytes: bytes, files: filePaths)
        // Checked only when this run receives: a sender in a read-only directory must still be able to send.
        let receives = expectPayloads > 0 || transfer.receiveDirectoryChosen
        let directory = receives ? try transfer.preparedReceiveDirectory() : transfer.receiveDirectory
        let manager = try await common.makeManager(
            strategy: strategy.value, transfer: transfer, receiveDirectory: directory)
        let session = PeerSession(manager: manager, output: output, decision: .askOrReject, streamTarget: target)
        let subscription = manager.events
        let events = Task { for await event in subscription { await session.handle(event) } }
        let cancelSignal = await CancelSignal.install { await session.cancelInFlight() }
        defer { cancelSignal.cancel() }
        let discoverer = Discoverer(connectionManager: manager)
        defer { withExtendedLifetime(discoverer) {} }
        let ownInfo = Data(try info.bytes())

        let peers = try await withTimeout(timeout, "no connection within \(Int(timeout)) s") {
            var peers: [String] = []
            // One at a time: each request is settled before the next, so a refusal names its target.
            for target in try await requestConnections(manager: manager, discoverer: discoverer, ownInfo: ownInfo, output: output) {
                switch await session.waitForSettled(target) {
                case .connected: peers.append(target)
                case .rejected: throw CLIFailure("\(await session.peer(target)) refused the connection")
                default: throw CLIFailure("the connection with \(await session.peer(target)) closed before it was accepted")
                }
            }
            return peers
        }
        await discoverer.stopDiscoveryAndWait()

        let failure: (any Error)?
        do {
            // Every peer gets the payloads in order; the peers are served concurrently.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for peer in peers {
                    group.addTask { try await plan.send(to: peer, manager: manager, session: session, output: output) }
                }
                try await group.waitForAll()
            }
            if let streamSource, let peer = peers.first {
                let source = StreamSource(path: streamSource)
                let id = PayloadID.unique()
                output.name(id, streamSource == "-" ? "standard input" : URL(fileURLWithPath: streamSource).lastPathComponent)
                let result = try await sendAndWaitStream(manager, session, id, source: source, peer: peer)
                let (_, seconds) = output.finishedTransfer(id)
                output.event(
                    "payload_sent",
                    PayloadSentEvent(
                        payloadID: String(id), type: "stream", size: result.size, sha256: result.digest, endpointID: peer),
                    human: "sent a stream to \(await session.peer(peer)): "
                        + "\(EventOutput.summary(size: result.size, seconds: seconds)), sha256 \(result.digest)")
            }
            if expectPayloads > 0 {
                try await withTimeout(timeout, "fewer than \(expectPayloads) payloads received within \(Int(timeout)) s") {
                    await session.waitForReceived(atLeast: expectPayloads)
                }
            }
            if linger > 0 {
                try? await Task.sleep(for: .milliseconds(Int(linger * 1000)))
            }
            failure = nil
        } catch {
            failure = error
        }
        // A failed run says goodbye too: without it a swift-nearby receiver takes the exit for a broken link and
        // waits out its reconnect window before it reports the end (and exits).
        for peer in peers { await manager.disconnect(from: peer) }
        events.cancel()
        if let failure { throw failure }
    }

    /// Requests a connection to every target (addresses directly, the others once discovery finds them; with no
    /// target, the one receiver discovery finds); returns the endpoint IDs in the order requested.
    private func requestConnections(
        manager: ConnectionManager, discoverer: Discoverer, ownInfo: Data, output: EventOutput
    ) async throws -> [String] {
        var requested: [String] = []
        for address in address {
            guard let (host, port) = Self.parse(address) else { continue }
            do {
                requested.append(try await manager.requestConnection(toAddress: host, port: port, using: ownInfo))
            } catch let error as NearbyError {
                throw CLIFailure("cannot connect to \(address): \(error.message)")
            }
        }
        let discovered: [String]
        if targetCount == 0 {
            discovered = [try await ReceiverPicker.pick(manager: manager, discoverer: discoverer, common: common, output: output)]
        } else if !endpoint.isEmpty || !toName.isEmpty {
            discovered = try await discoverNamed(manager: manager, discoverer: discoverer)
        } else {
            return requested
        }
        for id in discovered {
            do {
                try await discoverer.requestConnection(to: id, using: ownInfo)
            } catch let error as NearbyError {
                throw CLIFailure("cannot connect to \(id): \(error.message)")
            }
            requested.append(id)
        }
        return requested
    }

    /// Discovers until every `--endpoint` and `--to-name` is found.
    private func discoverNamed(manager: ConnectionManager, discoverer: Discoverer) async throws -> [String] {
        let (ids, names) = (Set(endpoint), Set(toName.map { Data($0.utf8) }))
        let subscription = manager.events
        let found = Task { () -> Result<[String], CLIFailure> in
            var (wantedIDs, wantedNames) = (ids, names)
            var found: [String] = []
            for await event in subscription {
                if case .discoveryFailed(let medium, let error) = event {
                    return .failure(CLIFailure("discovery over \(medium) failed: \(error.message)"))
                }
                guard case .endpointFound(let id, let context, _) = event, !found.contains(id) else { continue }
                if wantedIDs.remove(id) != nil || wantedNames.remove(context) != nil { found.append(id) }
                if wantedIDs.isEmpty && wantedNames.isEmpty { return .success(found) }
            }
            return .success(found)
        }
        do {
            try await discoverer.startDiscovery(mediums: common.announcedMediums)
        } catch {
            found.cancel()
            throw CLIFailure("cannot discover: \(ErrorText.describe(error))")
        }
        let discovered = try await found.value.get()
        guard discovered.count == endpoint.count + toName.count else {
            throw CLIFailure("discovery ended without finding every endpoint")
        }
        return discovered
    }

    private func sendAndWaitStream(
        _ manager: ConnectionManager, _ session: PeerSession, _ id: PayloadID, source: StreamSource, peer: String
    ) async throws -> (size: Int64, digest: String) {
        await session.registerOutgoing(id)
        do {
            try await manager.sendStream(to: peer, id: id) { try source.next() }
        } catch let error as NearbyError {
            throw CLIFailure("cannot send the stream: \(error.message)")
        }
        let result = await session.waitForOutgoing(id)
        if let failure = source.failure { throw CLIFailure(failure) }
        guard result == .success else {
            throw await PayloadPlan.failure("the stream", id: id, to: peer, result: result, session: session)
        }
        return source.summary()
    }

    static func parse(_ address: String) -> (String, Int)? {
        guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        var host = String(address[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}

/// Reads a stream payload's bytes from a file or standard input, hashing them on the way. A read error ends the
/// stream with that error (the payload fails) and is kept for the command's message.
final class StreamSource: Sendable {
    private let handle: FileHandle?
    private let path: String
    /// The digest so far and the first read error; its lock also keeps reads in order.
    private let running = LockedValue((digest: Digests.Running(), failure: String?.none))

    init(path: String) {
        self.path = path
        handle = path == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: path)
    }

    func next() throws -> [UInt8]? {
        try running.withLock { running in
            guard let handle else {
                running.failure = "cannot read \(path)"
                throw CLIFailure(running.failure!)
            }
            let data: Data?
            do {
                data = try handle.read(upToCount: 65_536)
            } catch {
                running.failure = "cannot read \(ErrorText.describe(error, path: path == "-" ? "standard input" : path))"
                throw CLIFailure(running.failure!)
            }
            guard let data, !data.isEmpty else { return nil }
            let bytes = Array(data)
            running.digest.update(bytes)
            return bytes
        }
    }

    /// Why reading failed, if it did.
    var failure: String? { running.withLock { $0.failure } }

    func summary() -> (size: Int64, digest: String) {
        let digest = running.withLock { $0.digest }
        return (digest.size, digest.finish())
    }
}
