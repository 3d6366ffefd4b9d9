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
    @OptionGroup var info: EndpointInfoOptions

    @Option(help: "TCP port to listen on (default: chosen by the system).")
    var port: Int?

    @Flag(help: "Accept every incoming connection without asking.")
    var accept = false

    @Option(name: .customLong("receive-dir"), help: "Where received files go (default: the current directory).")
    var receiveDir: String?

    @Flag(help: "Send every received bytes payload back to its sender.")
    var echo = false

    @Option(name: .customLong("bytes"), help: "A bytes payload to send to every peer once it is connected (repeatable).")
    var bytes: [String] = []

    @Option(name: .customLong("file"), help: "A file to send to every peer once it is connected (repeatable).")
    var files: [String] = []

    @Option(
        name: .customLong("connect"),
        help: "Also request a connection to HOST:PORT (repeatable; e.g. the other members of a --strategy cluster).")
    var connect: [String] = []

    func validate() throws {
        for address in connect where SendCommand.parse(address) == nil {
            throw ValidationError("--connect must be HOST:PORT, got \(address)")
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
        let manager = try await common.makeManager(receiveDirectory: directory, listenPort: port)
        manager.printBluetoothStatus(to: output)
        let session = PeerSession(manager: manager, output: output, decision: accept ? .accept : .askOrReject, echo: echo)
        let plan = try PayloadPlan(bytes: bytes, files: files)
        if !plan.isEmpty {
            // Every peer, incoming or from --connect, gets the payloads; peers are served concurrently.
            await session.setOnConnected { peer in
                do {
                    try await plan.send(to: peer, manager: manager, session: session, output: output)
                } catch {
                    EventOutput.warn("\(error)")
                }
            }
        }
        let subscription = manager.events
        let events = Task { for await event in subscription { await session.handle(event) } }
        let cancelSignal = await CancelSignal.install { await session.cancelInFlight() }
        defer { cancelSignal.cancel() }
        let advertiser = Advertiser(connectionManager: manager)
        let sessions: [any AdvertisingSession]
        do {
            sessions = try await advertiser.startAdvertising(using: Data(try info.bytes()), mediums: common.announcedMediums)
        } catch let error as NearbyError {
            throw CLIFailure("cannot advertise: \(error.message)")
        }
        let serviceType = ServiceIDHash.wifiLanServiceType(serviceID: common.serviceID).name
        for advertising in sessions {
            output.event(
                "advertising",
                AdvertisingEvent(
                    endpointID: manager.localEndpointID, port: advertising.port ?? 0, serviceType: serviceType,
                    medium: advertising.medium.rawValue, discoverable: advertising.discoverabilityProblem == nil),
                human: advertising.medium == .ble
                    ? "advertising as \(manager.localEndpointID) over BLE (\(advertising.advertisedName))"
                    : "advertising as \(manager.localEndpointID) on port \(advertising.port ?? 0) (\(serviceType))")
            if let problem = advertising.discoverabilityProblem {
                FileHandle.standardError.write(Data("nearby: warning: \(problem.message)\n".utf8))
            }
        }
        let ownInfo = Data(try info.bytes())
        let outgoing = Task {
            for address in connect {
                guard let (host, port) = SendCommand.parse(address) else { continue }
                do {
                    _ = try await manager.requestConnection(toAddress: host, port: port, using: ownInfo)
                } catch {
                    EventOutput.warn("cannot connect to \(address): \(error)")
                }
            }
        }
        _ = await Signals.waitForTermination()
        outgoing.cancel()
        await manager.shutdown()
        events.cancel()
        withExtendedLifetime(advertiser) {}
    }
}
