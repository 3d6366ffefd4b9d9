import Foundation
import NearbyConnections
import NearbyCore
import Testing

extension WiFiLANIntegration {
    /// A peer frozen with SIGSTOP stops answering keep-alives: the advertiser must drop it after the timeout.
    @Suite("Keep-alive timeout", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct KeepAliveTimeoutTests {
        @Test("a SIGSTOPped CLI sender is disconnected with a timeout error")
        func frozenPeerTimesOut() async throws {
            try await withScratch(timeout: 120, "frozen peer") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("keepalive")
                let advertiser = try Peer(
                    scratch, serviceID: serviceID,
                    keepAlive: KeepAliveSettings(interval: .milliseconds(500), timeout: .seconds(3)))
                let (_, port) = try await advertiser.advertise("watchful", scratch)

                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--address", "127.0.0.1:\(port)", "--name", "sleepy",
                    "--bytes", "ping", "--accept", "--linger", "60",
                    "--keep-alive-interval-ms", "500", "--keep-alive-timeout-ms", "3000", "--json",
                ])
                let (senderID, _) = try await advertiser.answerRequest(accept: true)
                try await advertiser.waitForState(.connected, of: senderID)
                try await sender.waitForEvent("connected")
                try await advertiser.log.wait("the sender's bytes") { event -> Bool? in
                    if case .bytesReceived(_, _, let data) = event, data == Data("ping".utf8) { return true }
                    return nil
                }
                // Idle but alive: keep-alives hold the connection past the 3 s timeout.
                try await Task.sleep(for: .seconds(4))
                #expect(!advertiser.log.contains {
                    if case .stateChanged(_, .disconnected, _) = $0 { return true }
                    return false
                }, "an idle connection whose peer answers keep-alives was dropped:\n\(advertiser.log.summary)")

                sender.signal(SIGSTOP)
                let error = try await advertiser.waitForState(.disconnected, of: senderID, timeout: 30)
                #expect(error?.code == .timeout, "\(String(describing: error))")
                sender.signal(SIGCONT)
                sender.stop()
            }
        }
    }
}
