import Foundation
import NearbyTestSupport
import Testing

extension WiFiLANIntegration {
    /// One `nearby send --strategy cluster` process with several targets: two advertisers found by name, a third
    /// by address.
    @Suite("nearby send to several endpoints", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct SendToSeveralTests {
        @Test("every target receives the bytes and the file intact; payload_sent names each target once per payload")
        func sendToThree() async throws {
            try await withScratch(timeout: 120, "send to several") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("several")
                let file = try ManyPeers.file(scratch, "shared.bin", size: 64 * 1024)
                var targets: [CLIProcess] = []
                for name in ["target-a", "target-b", "target-c"] {
                    targets.append(try scratch.launchCLI(name, [
                        "advertise", "--service-id", serviceID, "--strategy", "cluster", "--name", name, "--accept",
                        "--receive-dir", try scratch.directory(name).path, "--json",
                    ]))
                }
                var advertisedIDs: [String] = []
                for target in targets {
                    let advertising = try await target.waitForEvent("advertising", timeout: 60)
                    advertisedIDs.append(try #require(advertising.string("endpoint_id")))
                }
                let port = try await ManyPeers.port(of: targets[2])

                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--strategy", "cluster", "--to-name", "target-a",
                    "--to-name", "target-b", "--address", "127.0.0.1:\(port)", "--name", "fan-out",
                    "--bytes", "to all", "--file", file.url.path, "--accept", "--json",
                ])
                #expect(try await sender.waitForExit(timeout: 90) == 0, "\(sender.diagnostics)")
                let sent = sender.events("payload_sent")
                #expect(sent.count == 6, "\(sent)")
                // Those found by discovery are named by their advertised IDs; the address target by a local alias.
                let named = Set(sent.compactMap { $0.string("endpoint_id") })
                #expect(named.count == 3, "\(sent)")
                #expect(named.isSuperset(of: advertisedIDs.prefix(2)), "\(sent)")

                for target in targets {
                    let received = try await target.waitForEvent("payload_received", timeout: 30) { $0.string("type") == "file" }
                    #expect(received.string("sha256") == file.sha256)
                    let bytes = try await target.waitForEvent("payload_received", timeout: 30) { $0.string("type") == "bytes" }
                    #expect(bytes.string("sha256") == ManyPeers.sha256("to all"))
                }
            }
        }

        @Test("--stream with several targets is a usage error (exit 2)")
        func streamNeedsOneTarget() async throws {
            try await withScratch(timeout: 30, "stream to several") { scratch in
                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", "x", "--address", "127.0.0.1:1", "--address", "127.0.0.1:2",
                    "--name", "n", "--stream", "-",
                ])
                #expect(try await sender.waitForExit() == 2)
            }
        }
    }
}
