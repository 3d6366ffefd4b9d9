import Foundation
import NearbyConnections
import Testing

extension WiFiLANIntegration {
    /// When advertising stops, discoverers hear about it.
    @Suite("Endpoint lost", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct EndpointLostTests {
        @Test("stopAdvertising makes an in-process discoverer report endpointLost")
        func stopAdvertisingLosesEndpoint() async throws {
            try await withScratch(timeout: 60, "endpoint lost after stopAdvertising") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("lost")
                let advertiser = try Peer(scratch, serviceID: serviceID)
                let discoverer = try Peer(scratch, serviceID: serviceID)
                let (advertising, _) = try await advertiser.advertise("vanishing", scratch)
                let id = try await discoverer.discover(advertiser.manager.localEndpointID, scratch)
                advertising.stopAdvertising()
                try await discoverer.log.wait("endpointLost(\(id))") { event -> Bool? in
                    if case .endpointLost(id) = event { return true }
                    return nil
                }
            }
        }

        @Test("a CLI advertiser ended with SIGTERM makes an in-process discoverer report endpointLost")
        func terminatedCLIAdvertiserIsLost() async throws {
            try await withScratch(timeout: 60, "endpoint lost after SIGTERM") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("lost-cli")
                let advertiser = try scratch.launchCLI("advertiser", [
                    "advertise", "--service-id", serviceID, "--name", "short-lived", "--accept",
                    "--receive-dir", try scratch.directory("received").path, "--json",
                ])
                let advertising = try await advertiser.waitForEvent("advertising")
                let advertiserID = try #require(advertising.string("endpoint_id"))
                let discoverer = try Peer(scratch, serviceID: serviceID)
                let id = try await discoverer.discover(advertiserID, scratch)
                advertiser.signal(SIGTERM)
                #expect(try await advertiser.waitForExit() == 0, "\(advertiser.diagnostics)")
                try await discoverer.log.wait("endpointLost(\(id))") { event -> Bool? in
                    if case .endpointLost(id) = event { return true }
                    return nil
                }
            }
        }
    }
}
