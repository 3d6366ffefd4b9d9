import ArgumentParser
import Foundation
import NearbyConnections
import NearbyWire

/// `nearby discover`: print the endpoints of a service as they come and go.
struct DiscoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover", abstract: "Discover advertisers of a service.")

    @OptionGroup var common: CommonOptions

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var timeout: Double?

    func run() async throws {
        let output = EventOutput(json: common.json)
        let manager = try await common.makeManager(receiveDirectory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        manager.printBluetoothStatus(to: output)
        let discoverer = Discoverer(connectionManager: manager)
        try await discoverer.startDiscovery(mediums: common.announcedMediums)
        let subscription = manager.events
        let events = Task { () -> CLIFailure? in
            for await event in subscription {
                switch event {
                case .endpointFound(let id, let context, let medium):
                    output.event(
                        "endpoint_found",
                        EndpointFoundEvent(endpointID: id, endpointInfoHex: Hex.encode(context), medium: medium.rawValue),
                        human: "found \(id) (\(PeerSession.display(context))) over \(medium)")
                case .endpointLost(let id):
                    output.event("endpoint_lost", EndpointEvent(endpointID: id), human: "lost \(id)")
                case .discoveryFailed(let medium, let error):
                    return CLIFailure("discovery over \(medium) failed: \(error.message)")
                default:
                    break
                }
            }
            return nil
        }
        let stop = Task {
            if let timeout {
                try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
            } else {
                _ = await Signals.waitForTermination()
            }
            events.cancel()
        }
        let failure = await events.value
        stop.cancel()
        await manager.shutdown()
        withExtendedLifetime(discoverer) {}
        if let failure { throw failure }
    }
}
