import ArgumentParser
import Foundation
import NearbyConnections
import NearbyCore
import NearbyWire

/// `nearby send`: connect to an endpoint, send payloads in order, disconnect.
struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Connect to an endpoint and send bytes, files and a stream.")

    @OptionGroup var common: CommonOptions
    @OptionGroup var info: EndpointInfoOptions

    @Option(help: "The endpoint ID to connect to (found by discovery).")
    var endpoint: String?

    @Option(name: .customLong("to-name"), help: "Connect to the endpoint whose name (endpoint info) is this text.")
    var toName: String?

    @Option(help: "Connect to HOST:PORT directly, without discovery.")
    var address: String?

    @Option(name: .customLong("bytes"), help: "A bytes payload (repeatable).")
    var bytes: [String] = []

    @Option(name: .customLong("file"), help: "A file to send (repeatable).")
    var files: [String] = []

    @Option(help: "Send this file, or - for standard input, as a stream payload.")
    var stream: String?

    @Flag(help: "Accept the connection without asking.")
    var accept = false

    @Option(help: "Seconds to stay connected after the last payload (default 0).")
    var linger: Double = 0

    @Option(help: "Give up after this many seconds (default 60).")
    var timeout: Double = 60

    func validate() throws {
        let targets = [endpoint, toName, address].compactMap { $0 }
        guard targets.count == 1 else {
            throw ValidationError("give exactly one of --endpoint, --to-name and --address")
        }
        if let address, Self.parse(address) == nil {
            throw ValidationError("--address must be HOST:PORT")
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
        let manager = try common.makeManager(receiveDirectory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        let session = PeerSession(manager: manager, output: output, decision: accept ? .accept : .askOrReject)
        let subscription = manager.events
        let events = Task { for await event in subscription { await session.handle(event) } }
        let cancelSignal = await CancelSignal.install { await session.cancelInFlight() }
        defer { cancelSignal.cancel() }
        let discoverer = Discoverer(connectionManager: manager)
        defer { withExtendedLifetime(discoverer) {} }
        let ownInfo = Data(try info.bytes())

        let peer = try await withTimeout(timeout, "no connection within \(Int(timeout)) s") {
            let peer = try await connect(manager: manager, discoverer: discoverer, ownInfo: ownInfo)
            switch await session.waitForSettled(peer) {
            case .connected: return peer
            case .rejected: throw CLIFailure("the connection with \(peer) was rejected")
            default: throw CLIFailure("the connection with \(peer) closed before it was accepted")
            }
        }
        await discoverer.stopDiscoveryAndWait()

        for text in bytes {
            let data = Data(text.utf8)
            let id = PayloadID.unique()
            await session.registerOutgoing(id, type: "bytes", size: Int64(data.count), sha256: Digests.sha256(data))
            try await sendAndWait(manager, session, output, id, type: "bytes", size: Int64(data.count), sha256: Digests.sha256(data)) {
                try await manager.send(data, to: peer, id: id)
            }
        }
        for path in files {
            let url = URL(fileURLWithPath: path)
            let (digest, size) = try Digests.sha256(fileAt: url)
            let id = PayloadID.unique()
            try await sendAndWait(manager, session, output, id, type: "file", size: size, sha256: digest) {
                try await manager.sendResource(at: url, withName: url.lastPathComponent, to: peer, id: id)
            }
        }
        if let stream {
            let source = StreamSource(path: stream)
            let id = PayloadID.unique()
            let result = try await sendAndWaitStream(manager, session, id, source: source, peer: peer)
            output.event(
                "payload_sent", PayloadSentEvent(payloadID: id, type: "stream", size: result.size, sha256: result.digest),
                human: "sent a stream of \(EventOutput.size(result.size)) (sha256 \(result.digest))")
        }
        if linger > 0 {
            try? await Task.sleep(for: .milliseconds(Int(linger * 1000)))
        }
        await manager.disconnect(from: peer)
        events.cancel()
    }

    private func connect(manager: ConnectionManager, discoverer: Discoverer, ownInfo: Data) async throws -> String {
        if let address, let (host, port) = Self.parse(address) {
            do {
                return try await manager.requestConnection(toAddress: host, port: port, using: ownInfo)
            } catch let error as NearbyError {
                throw CLIFailure("cannot connect to \(address): \(error.message)")
            }
        }
        let wanted = toName.map { Data($0.utf8) }
        let subscription = manager.events
        let found = Task { () -> String? in
            for await event in subscription {
                if case .endpointFound(let id, let context, _) = event, id == endpoint || context == wanted {
                    return id
                }
            }
            return nil
        }
        try await discoverer.startDiscovery(mediums: common.announcedMediums)
        guard let id = await found.value else { throw CLIFailure("discovery ended without finding the endpoint") }
        do {
            try await discoverer.requestConnection(to: id, using: ownInfo)
        } catch let error as NearbyError {
            throw CLIFailure("cannot connect to \(id): \(error.message)")
        }
        return id
    }

    private func sendAndWait(
        _ manager: ConnectionManager, _ session: PeerSession, _ output: EventOutput, _ id: PayloadID, type: String,
        size: Int64, sha256: String, _ start: () async throws -> Void
    ) async throws {
        await session.registerOutgoing(id, type: type, size: size, sha256: sha256)
        do {
            try await start()
        } catch let error as NearbyError {
            throw CLIFailure("cannot send: \(error.message)")
        }
        let result = await session.waitForOutgoing(id)
        guard result == .success else { throw CLIFailure("sending payload \(id) ended with \(result)") }
        output.event(
            "payload_sent", PayloadSentEvent(payloadID: id, type: type, size: size, sha256: sha256),
            human: "sent \(type) payload \(id) (\(EventOutput.size(size)), sha256 \(sha256))")
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
        running.withLock { ($0.size, $0.finish()) }
    }
}
