import Foundation
import NearbyConnections
import Testing

extension WiFiLANIntegration {
    /// Either side may say no: the connection then never comes up and the sender fails.
    @Suite("Rejection", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct RejectionTests {
        @Test("an advertiser without --accept and without a TTY rejects; the sender prints rejected and exits 1")
        func advertiserWithoutTTYRejects() async throws {
            try await withScratch(timeout: 90, "rejection by the CLI advertiser") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("reject-cli")
                let name = "picky-\(UUID().uuidString.prefix(6))"
                let advertiser = try scratch.launchCLI("advertiser", [
                    "advertise", "--service-id", serviceID, "--name", name,
                    "--receive-dir", try scratch.directory("received").path, "--json",
                ])
                try await advertiser.waitForEvent("advertising")

                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--to-name", name, "--name", "hopeful",
                    "--bytes", "hello", "--accept", "--json",
                ])
                #expect(try await sender.waitForExit(timeout: 60) == 1, "\(sender.diagnostics)")
                #expect(!sender.events("rejected").isEmpty, "\(sender.diagnostics)")
                #expect(sender.events("connected").isEmpty)
                #expect(sender.events("payload_sent").isEmpty)

                try await advertiser.waitForEvent("rejected")
                #expect(advertiser.events("connected").isEmpty)
                #expect(advertiser.events("payload_received").isEmpty)
                #expect(advertiser.isRunning, "the advertiser must keep running after a rejection\n\(advertiser.diagnostics)")
            }
        }

        @Test("an in-process advertiser rejects while the CLI sender accepts")
        func libraryAdvertiserRejectsCLISender() async throws {
            try await withScratch(timeout: 90, "rejection by the library advertiser") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("reject-lib")
                let advertiser = try Peer(scratch, serviceID: serviceID)
                let (_, port) = try await advertiser.advertise("gatekeeper", scratch)

                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--address", "127.0.0.1:\(port)", "--name", "hopeful",
                    "--bytes", "hello", "--accept", "--json",
                ])
                let (id, _) = try await advertiser.answerRequest(accept: false)
                try await advertiser.waitForState(.rejected, of: id)

                #expect(try await sender.waitForExit(timeout: 60) == 1, "\(sender.diagnostics)")
                #expect(!sender.events("connection_initiated").isEmpty, "\(sender.diagnostics)")
                #expect(!sender.events("rejected").isEmpty, "\(sender.diagnostics)")
                #expect(sender.events("connected").isEmpty)
                #expect(!advertiser.log.contains {
                    if case .stateChanged(_, .connected, _) = $0 { return true }
                    if case .bytesReceived = $0 { return true }
                    return false
                })
            }
        }
    }
}
