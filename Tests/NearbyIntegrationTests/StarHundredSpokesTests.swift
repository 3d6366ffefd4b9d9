import Foundation
import NearbyTestSupport
import Testing

extension WiFiLANIntegration {
    /// A star: one `nearby advertise --strategy star` hub and 100 `nearby send` spokes at once, every one a process
    /// of its own. Heavy (about a hundred processes on the machine at the same time): keep it out of sanitizer runs.
    @Suite("Star hub with 100 spokes", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct StarHundredSpokesTests {
        static let spokeCount = 100
        static let fileSize = 64 * 1024

        @Test("every spoke's file and bytes reach the hub intact while the hub sends a file and bytes to every spoke")
        func hundredSpokes() async throws {
            try await withScratch(timeout: 300, "star with 100 spokes") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("star")
                let hubFile = try ManyPeers.file(scratch, "hub.bin", size: Self.fileSize)
                let hubText = "hello from the hub"
                let hub = try scratch.launchCLI("hub", [
                    "advertise", "--service-id", serviceID, "--strategy", "star", "--name", "hub", "--accept",
                    "--receive-dir", try scratch.directory("hub").path, "--bytes", hubText, "--file", hubFile.url.path,
                    "--json",
                ])
                let port = try await ManyPeers.port(of: hub)

                // Spokes connect to the hub's address directly (no DNS-SD browse per spoke: cheaper on 2 cores).
                var spokes: [(name: String, text: String, file: SentFile, process: CLIProcess)] = []
                for index in 0..<Self.spokeCount {
                    let name = "spoke-\(index)"
                    let text = "hello from \(name)"
                    let file = try ManyPeers.file(scratch, "\(name).bin", size: Self.fileSize)
                    let process = try scratch.launchCLI(name, [
                        "send", "--service-id", serviceID, "--strategy", "star", "--address", "127.0.0.1:\(port)",
                        "--name", name, "--bytes", text, "--file", file.url.path, "--accept",
                        "--receive-dir", try scratch.directory(name).path, "--expect-payloads", "2",
                        "--timeout", "240", "--json",
                    ])
                    spokes.append((name, text, file, process))
                }

                for spoke in spokes {
                    #expect(try await spoke.process.waitForExit(timeout: 240) == 0, "\(spoke.process.diagnostics)")
                    // The spoke got the hub's bytes and file intact, and sent its own.
                    let received = spoke.process.events("payload_received")
                    #expect(received.contains { $0.string("type") == "bytes" && $0.string("sha256") == ManyPeers.sha256(hubText) },
                            "\(spoke.process.diagnostics)")
                    #expect(received.contains { $0.string("type") == "file" && $0.string("sha256") == hubFile.sha256 },
                            "\(spoke.process.diagnostics)")
                    #expect(spoke.process.events("payload_sent").count == 2, "\(spoke.process.diagnostics)")
                }

                // The hub got every spoke's bytes and file intact, each from the right endpoint.
                try await ManyPeers.waitForCount(hub, "payload_received", 2 * Self.spokeCount, timeout: 60)
                let hubReceived = hub.events("payload_received")
                for spoke in spokes {
                    let id = try #require(ManyPeers.endpointID(of: spoke.name, seenBy: hub), "\(spoke.name) never reached the hub")
                    let fromSpoke = hubReceived.filter { $0.string("endpoint_id") == id }
                    #expect(fromSpoke.contains { $0.string("type") == "bytes" && $0.string("sha256") == ManyPeers.sha256(spoke.text) },
                            "\(spoke.name): \(fromSpoke)")
                    #expect(fromSpoke.contains {
                        $0.string("type") == "file" && $0.string("sha256") == spoke.file.sha256 && $0.int("size") == Int64(Self.fileSize)
                    }, "\(spoke.name): \(fromSpoke)")
                }
                #expect(Set(hub.events("connected").compactMap { $0.string("endpoint_id") }).count == Self.spokeCount)
                #expect(hub.isRunning, "\(hub.diagnostics)")
            }
        }
    }
}
