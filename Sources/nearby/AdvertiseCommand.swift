import ArgumentParser
import Foundation
import NearbyConnections
import NearbyCore
import NearbyWire

/// `nearby advertise`: listen, advertise, and handle incoming connections until SIGINT/SIGTERM. Serves any number
/// of peers at once (as many as `--strategy` allows): each is accepted, received from, and sent `--bytes`/`--file`.
struct AdvertiseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertise", abstract: "Advertise this device and accept connections until interrupted.")

    @OptionGroup var common: CommonOptions
    @OptionGroup var strategy: StrategyOptions
    @OptionGroup var info: EndpointInfoOptions

    @Option(help: "TCP port to listen on (default: chosen by the system).")
    var port: Int?

    @Flag(help: "Accept every incoming connection without asking.")
    var accept = false

    @OptionGroup var transfer: TransferOptions

    @Option(
        name: .customLong("stream-to"),
        help: ArgumentHelp("Write the first received stream to this file, or - for standard output.", valueName: "path"))
    var streamTo: String?

    @Flag(help: "Send every received bytes payload back to its sender.")
    var echo = false

    @Option(name: .customLong("bytes"), help: "A bytes payload to send to every peer once it is connected (repeatable).")
    var bytes: [String] = []

    @Option(name: .customLong("file"), help: "A file or folder to send to every peer once it is connected (repeatable).")
    var files: [String] = []

    @Option(
        name: .customLong("connect"),
        help: "Also request a connection to HOST:PORT (repeatable; e.g. the other members of a --strategy cluster).")
    var connect: [String] = []

    func validate() throws {
        for address in connect where SendCommand.parse(address) == nil {
            throw ValidationError("--connect must be HOST:PORT, got \(address)")
        }
        if let port, !(0...65535).contains(port) {
            throw ValidationError("--port must be 0 to 65535, got \(port)")
        }
        for file in files { try SendCommand.checkReadable(file) }
        for text in bytes where text.utf8.count > 1_047_552 {
            throw ValidationError("a --bytes payload holds at most 1047552 bytes; use --file")
        }
    }

    func run() async throws {
        let run = AdvertisingRun(
            common: common, strategy: strategy.value, info: info, transfer: transfer, port: port, accept: accept,
            streamTo: streamTo, echo: echo, bytes: bytes, files: files, connect: connect)
        try await run.run(untilFirstPeerLeaves: false)
    }
}

/// `nearby receive`: advertise under the default service ID and the host name, take one sender's payloads, and
/// exit when it disconnects. The counterpart of `nearby send FILE…` with no options.
struct ReceiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive", abstract: "Wait for one sender (`nearby send` elsewhere), receive what it sends, and exit.",
        discussion: """
            On a terminal, you are asked whether to accept the sender, with the 4-digit code both sides show; \
            without one, --accept is needed. Files go to the current directory (or --receive-dir), under safe \
            names, folders recreated. Exit status 1 when a payload failed. For more than one sender, use \
            `nearby advertise`.
            """)

    @OptionGroup var common: CommonOptions
    @OptionGroup var strategy: StrategyOptions
    @OptionGroup var info: EndpointInfoOptions

    @Flag(help: "Accept the sender without asking.")
    var accept = false

    @OptionGroup var transfer: TransferOptions

    @Option(
        name: .customLong("stream-to"),
        help: ArgumentHelp("Write a received stream to this file, or - for standard output.", valueName: "path"))
    var streamTo: String?

    @Option(help: "TCP port to listen on (default: chosen by the system).")
    var port: Int?

    func run() async throws {
        let run = AdvertisingRun(
            common: common, strategy: strategy.value, info: info, transfer: transfer, port: port, accept: accept,
            streamTo: streamTo, echo: false, bytes: [], files: [], connect: [])
        try await run.run(untilFirstPeerLeaves: true)
    }
}

/// What `advertise` and `receive` do: check the receive directory, advertise, handle peers; `receive` ends when
/// the first connected peer leaves.
struct AdvertisingRun {
    var common: CommonOptions
    var strategy: Strategy
    var info: EndpointInfoOptions
    var transfer: TransferOptions
    var port: Int?
    var accept: Bool
    var streamTo: String?
    var echo: Bool
    var bytes: [String]
    var files: [String]
    var connect: [String]

    func run(untilFirstPeerLeaves: Bool) async throws {
        let target = streamTo.map(StreamTarget.init(argument:))
        let output = EventOutput(
            json: common.json, quiet: transfer.isQuiet,
            descriptor: target == .standardOutput ? STDERR_FILENO : STDOUT_FILENO)
        let directory = try transfer.preparedReceiveDirectory()
        let plan = try PayloadPlan(bytes: bytes, files: files)
        let manager = try await common.makeManager(
            strategy: strategy, transfer: transfer, receiveDirectory: directory, listenPort: port)
        manager.printBluetoothStatus(to: output)
        let session = PeerSession(
            manager: manager, output: output, decision: accept ? .accept : .askOrReject, echo: echo,
            streamTarget: target)
        if !plan.isEmpty {
            // Every peer, incoming or from --connect, gets the payloads; peers are served concurrently.
            await session.setOnConnected { peer in
                do {
                    try await plan.send(to: peer, manager: manager, session: session, output: output)
                } catch {
                    EventOutput.warn(ErrorText.describe(error))
                }
            }
        }
        let subscription = manager.events
        let events = Task { for await event in subscription { await session.handle(event) } }
        let cancelSignal = await CancelSignal.install { await session.cancelInFlight() }
        defer { cancelSignal.cancel() }
        let advertiser = Advertiser(connectionManager: manager)
        let ownInfo = Data(try info.bytes())
        let sessions: [any AdvertisingSession]
        do {
            sessions = try await advertiser.startAdvertising(using: ownInfo, mediums: common.announcedMediums)
        } catch let error as NearbyError {
            throw CLIFailure("cannot advertise: \(error.message)")
        }
        let serviceType = ServiceIDHash.wifiLanServiceType(serviceID: common.serviceID).name
        let name = PeerSession.display(ownInfo)
        for advertising in sessions {
            output.event(
                "advertising",
                AdvertisingEvent(
                    endpointID: manager.localEndpointID, port: advertising.port ?? 0, serviceType: serviceType,
                    medium: advertising.medium.rawValue, discoverable: advertising.discoverabilityProblem == nil),
                human: advertising.medium == .ble
                    ? "advertising as \(name) (\(manager.localEndpointID)) over BLE (\(advertising.advertisedName))"
                    : "advertising as \(name) (\(manager.localEndpointID)) on port \(advertising.port ?? 0), "
                        + "service \(common.serviceID)")
            if let problem = advertising.discoverabilityProblem {
                EventOutput.warn("warning: \(problem.message) (`nearby doctor` checks why)")
            }
        }
        if untilFirstPeerLeaves {
            output.note("waiting for a sender: run `nearby send FILE…` on the other device (Ctrl-C to stop)")
        }
        let outgoing = Task {
            for address in connect {
                guard let (host, port) = SendCommand.parse(address) else { continue }
                do {
                    _ = try await manager.requestConnection(toAddress: host, port: port, using: ownInfo)
                } catch {
                    EventOutput.warn("cannot connect to \(address): \(ErrorText.describe(error))")
                }
            }
        }
        var interrupted = true
        if untilFirstPeerLeaves {
            interrupted = await firstOf(
                { _ = await Signals.waitForTermination(); return true },
                { _ = await session.waitForDeparture(); return false })
        } else {
            _ = await Signals.waitForTermination()
        }
        outgoing.cancel()
        await advertiser.stopAdvertisingAndWait()
        if !interrupted { await session.finishStreams() }
        await manager.shutdown()
        events.cancel()
        withExtendedLifetime(advertiser) {}
        if untilFirstPeerLeaves {
            let failed = await session.failedIncoming
            if interrupted { throw CLIFailure("interrupted before a sender finished") }
            if failed > 0 { throw CLIFailure("\(failed) payload(s) failed (see above)") }
        }
    }
}
