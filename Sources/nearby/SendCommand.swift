import ArgumentParser
import Foundation
import NearbyConnections
import NearbyCore
import NearbyWire

/// `nearby send`: connect to one endpoint or several, send payloads in order (to every peer at once), disconnect.
/// Several targets mean several outgoing connections, which only `--strategy cluster` allows (Google's topology
/// rules: a star spoke and a point-to-point device hold one).
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Connect to one or more endpoints and send bytes, files and a stream.",
        discussion: "Several targets (repeated --address, --endpoint, --to-name) need --strategy cluster.")

    @OptionGroup var common: CommonOptions
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

    @Option(name: .customLong("file"), help: "A file to send (repeatable).")
    var files: [String] = []

    @Option(help: "Send this file, or - for standard input, as a stream payload (one target only).")
    var stream: String?

    @Flag(help: "Accept the connection without asking.")
    var accept = false

    @Option(name: .customLong("receive-dir"), help: "Where received files go (default: the current directory).")
    var receiveDir: String?

    @Option(
        name: .customLong("expect-payloads"),
        help: "After sending, stay connected until this many payloads were received (from all peers together).")
    var expectPayloads: Int = 0

    @Option(help: "Seconds to stay connected after the last payload (default 0).")
    var linger: Double = 0

    @Option(help: "Give up after this many seconds (default 60).")
    var timeout: Double = 60

    /// Every target, in the order given: addresses first, then endpoint IDs, then names.
    private var targetCount: Int { endpoint.count + toName.count + address.count }

    func validate() throws {
        guard targetCount >= 1 else {
            throw ValidationError("give at least one --endpoint, --to-name or --address")
        }
        for address in address where Self.parse(address) == nil {
            throw ValidationError("--address must be HOST:PORT")
        }
        if stream != nil, targetCount > 1 {
            throw ValidationError("--stream sends to one target only")
        }
        if expectPayloads < 0 {
            throw ValidationError("--expect-payloads must be 0 or more")
        }
        for file in files where !FileManager.default.isReadableFile(atPath: file) {
            throw ValidationError("cannot read --file \(file)")
        }
        for text in bytes where text.utf8.count > 1_047_552 {
            throw ValidationError("a --bytes payload holds at most 1047552 bytes; use --file")
        }
    }

    func run() async throws {
        let output = EventOutput(json: common.json)
        let directory = URL(fileURLWithPath: receiveDir ?? FileManager.default.currentDirectoryPath)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let manager = try await common.makeManager(receiveDirectory: directory)
        let session = PeerSession(manager: manager, output: output, decision: accept ? .accept : .askOrReject)
        let subscription = manager.events
        let events = Task { for await event in subscription { await session.handle(event) } }
        let cancelSignal = await CancelSignal.install { await session.cancelInFlight() }
        defer { cancelSignal.cancel() }
        let discoverer = Discoverer(connectionManager: manager)
        defer { withExtendedLifetime(discoverer) {} }
        let ownInfo = Data(try info.bytes())
        let plan = try PayloadPlan(bytes: bytes, files: files)

        let peers = try await withTimeout(timeout, "no connection within \(Int(timeout)) s") {
            var peers: [String] = []
            // One at a time: each request is settled before the next, so a refusal names its target.
            for target in try await requestConnections(manager: manager, discoverer: discoverer, ownInfo: ownInfo) {
                switch await session.waitForSettled(target) {
                case .connected: peers.append(target)
                case .rejected: throw CLIFailure("the connection with \(target) was rejected")
                default: throw CLIFailure("the connection with \(target) closed before it was accepted")
                }
            }
            return peers
        }
        await discoverer.stopDiscoveryAndWait()

        // Every peer gets the payloads in order; the peers are served concurrently.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for peer in peers {
                group.addTask { try await plan.send(to: peer, manager: manager, session: session, output: output) }
            }
            try await group.waitForAll()
        }
        if let stream, let peer = peers.first {
            let source = StreamSource(path: stream)
            let id = PayloadID.unique()
            let result = try await sendAndWaitStream(manager, session, id, source: source, peer: peer)
            output.event(
                "payload_sent",
                PayloadSentEvent(payloadID: id, type: "stream", size: result.size, sha256: result.digest, endpointID: peer),
                human: "sent a stream of \(EventOutput.size(result.size)) (sha256 \(result.digest))")
        }
        if expectPayloads > 0 {
            try await withTimeout(timeout, "fewer than \(expectPayloads) payloads received within \(Int(timeout)) s") {
                await session.waitForReceived(atLeast: expectPayloads)
            }
        }
        if linger > 0 {
            try? await Task.sleep(for: .milliseconds(Int(linger * 1000)))
        }
        for peer in peers { await manager.disconnect(from: peer) }
        events.cancel()
    }

    /// Requests a connection to every target (addresses directly, the others once discovery finds them); returns
    /// the endpoint IDs in the order requested.
    private func requestConnections(manager: ConnectionManager, discoverer: Discoverer, ownInfo: Data) async throws -> [String] {
        var requested: [String] = []
        for address in address {
            guard let (host, port) = Self.parse(address) else { continue }
            do {
                requested.append(try await manager.requestConnection(toAddress: host, port: port, using: ownInfo))
            } catch let error as NearbyError {
                throw CLIFailure("cannot connect to \(address): \(error.message)")
            }
        }
        guard !endpoint.isEmpty || !toName.isEmpty else { return requested }
        let (ids, names) = (Set(endpoint), Set(toName.map { Data($0.utf8) }))
        let subscription = manager.events
        let found = Task { () -> [String] in
            var (wantedIDs, wantedNames) = (ids, names)
            var found: [String] = []
            for await event in subscription {
                guard case .endpointFound(let id, let context, _) = event, !found.contains(id) else { continue }
                if wantedIDs.remove(id) != nil || wantedNames.remove(context) != nil { found.append(id) }
                if wantedIDs.isEmpty && wantedNames.isEmpty { return found }
            }
            return found
        }
        try await discoverer.startDiscovery(mediums: common.announcedMediums)
        let discovered = await found.value
        guard discovered.count == endpoint.count + toName.count else {
            throw CLIFailure("discovery ended without finding every endpoint")
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

    private func sendAndWaitStream(
        _ manager: ConnectionManager, _ session: PeerSession, _ id: PayloadID, source: StreamSource, peer: String
    ) async throws -> (size: Int64, digest: String) {
        do {
            try await manager.sendStream(to: peer, id: id) { source.next() }
        } catch let error as NearbyError {
            throw CLIFailure("cannot send the stream: \(error.message)")
        }
        let result = await session.waitForOutgoing(id)
        guard result == .success else { throw CLIFailure("sending the stream ended with \(result)") }
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

/// Reads a stream payload's bytes from a file or standard input, hashing them on the way.
final class StreamSource: Sendable {
    private let handle: FileHandle?
    /// The digest so far; its lock also keeps reads in order.
    private let running = LockedValue(Digests.Running())

    init(path: String) {
        handle = path == "-" ? FileHandle.standardInput : FileHandle(forReadingAtPath: path)
    }

    func next() -> [UInt8]? {
        running.withLock { running in
            guard let handle, let data = try? handle.read(upToCount: 65_536), !data.isEmpty else { return nil }
            let bytes = Array(data)
            running.update(bytes)
            return bytes
        }
    }

    func summary() -> (size: Int64, digest: String) {
        running.withLock { ($0.size, $0.finish()) }  // lock-ok: a digest's finish (a value), not a stream's
    }
}
