import ArgumentParser
import Foundation
import NearbyConnections
import NearbyWire

/// `nearby discover`: print the endpoints of a service as they come and go.
struct DiscoverCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discover", abstract: "Discover advertisers of a service.")

    @OptionGroup var common: CommonOptions
    @OptionGroup var strategy: StrategyOptions

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var timeout: Double?

    func run() async throws {
        let output = EventOutput(json: common.json)
        let manager = try await common.makeManager(
            strategy: strategy.value, transfer: nil,
            receiveDirectory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        manager.printBluetoothStatus(to: output)
        let discoverer = Discoverer(connectionManager: manager)
        // Subscribed before discovery starts: a failure reported at once (avahi-daemon not running) is not missed.
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
                    return CLIFailure("discovery over \(medium) failed: \(error.message) (`nearby doctor` checks why)")
                default:
                    break
                }
            }
            return nil
        }
        do {
            try await discoverer.startDiscovery(mediums: common.announcedMediums)
        } catch {
            events.cancel()
            await manager.shutdown()
            throw CLIFailure("cannot discover: \(ErrorText.describe(error)) (`nearby doctor` checks why)")
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
