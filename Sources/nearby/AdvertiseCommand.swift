import ArgumentParser
import Foundation
import NearbyConnections
import NearbyCore
import NearbyWire

/// `nearby advertise`: listen, advertise, and handle incoming connections until SIGINT/SIGTERM.
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

    func run() async throws {
        let output = EventOutput(json: common.json)
        let directory = URL(fileURLWithPath: receiveDir ?? FileManager.default.currentDirectoryPath)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let manager = try common.makeManager(receiveDirectory: directory, listenPort: port)
        let session = PeerSession(manager: manager, output: output, decision: accept ? .accept : .askOrReject, echo: echo)
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
        _ = await Signals.waitForTermination()
        await manager.shutdown()
        events.cancel()
        withExtendedLifetime(advertiser) {}
    }
}
