import Foundation
import NearbyTestSupport
import Testing

extension WiFiLANIntegration {
    /// A star hub (`nearby advertise --strategy star`) whose spoke is killed with SIGKILL in the middle of a large
    /// file while other spokes connect and transfer.
    @Suite("Star spoke killed mid-transfer", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct StarSpokeKilledTests {
        @Test("the hub drops the dead spoke only; the other spokes' payloads both ways arrive intact")
        func spokeKilledMidTransfer() async throws {
            try await withScratch(timeout: 180, "star spoke killed") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("starkill")
                let hubFile = try ManyPeers.file(scratch, "hub.bin", size: 64 * 1024)
                let hubText = "hello from the hub"
                let hubDirectory = try scratch.directory("hub")
                let hub = try scratch.launchCLI("hub", [
                    "advertise", "--service-id", serviceID, "--strategy", "star", "--name", "hub", "--accept",
                    "--receive-dir", hubDirectory.path, "--bytes", hubText, "--file", hubFile.url.path, "--json",
                ])
                let port = try await ManyPeers.port(of: hub)

                func spoke(_ name: String, file: URL, extra: [String] = []) throws -> CLIProcess {
                    try scratch.launchCLI(name, [
                        "send", "--service-id", serviceID, "--strategy", "star", "--address", "127.0.0.1:\(port)",
                        "--name", name, "--file", file.path, "--accept", "--receive-dir", try scratch.directory(name).path,
                        "--timeout", "120", "--json",
                    ] + extra)
                }

                // The doomed spoke sends 1 GiB (sparse: no disk, no time to write it); it is killed once the hub
                // has received part of it.
                let doomed = try spoke("doomed", file: try scratch.sparseFile("doomed.bin", size: 1 << 30))
                _ = try await eventually(within: 60, "the hub to receive part of the doomed file") {
                    ManyPeers.endpointID(of: "doomed", seenBy: hub).flatMap { id in
                        hub.events("transfer_update").first {
                            $0.string("endpoint_id") == id && $0.string("status") == "in_progress" && ($0.int("bytes") ?? 0) > 1 << 20
                        }
                    }
                }
                let doomedID = try #require(ManyPeers.endpointID(of: "doomed", seenBy: hub))

                var survivors: [(name: String, text: String, file: SentFile, process: CLIProcess)] = []
                for index in 0..<4 {
                    let name = "spoke-\(index)"
                    let text = "hello from \(name)"
                    let file = try ManyPeers.file(scratch, "\(name).bin", size: 64 * 1024)
                    survivors.append((name, text, file, try spoke(name, file: file.url, extra: ["--bytes", text, "--expect-payloads", "2"])))
                    if index == 1 {
                        doomed.signal(SIGKILL)
                        #expect(try await doomed.waitForExit() == 128 + SIGKILL)
                    }
                }
                try await hub.waitForEvent("disconnected", timeout: 60) { $0.string("endpoint_id") == doomedID }

                for survivor in survivors {
                    #expect(try await survivor.process.waitForExit(timeout: 120) == 0, "\(survivor.process.diagnostics)")
                    let received = survivor.process.events("payload_received")
                    #expect(received.contains { $0.string("sha256") == hubFile.sha256 }, "\(survivor.process.diagnostics)")
                    #expect(received.contains { $0.string("sha256") == ManyPeers.sha256(hubText) }, "\(survivor.process.diagnostics)")
                    let id = try #require(ManyPeers.endpointID(of: survivor.name, seenBy: hub))
                    try await ManyPeers.waitForCount(hub, "payload_received", 2, timeout: 30) { $0.string("endpoint_id") == id }
                    let fromSurvivor = hub.events("payload_received").filter { $0.string("endpoint_id") == id }
                    #expect(fromSurvivor.contains { $0.string("sha256") == survivor.file.sha256 }, "\(fromSurvivor)")
                    #expect(fromSurvivor.contains { $0.string("sha256") == ManyPeers.sha256(survivor.text) }, "\(fromSurvivor)")
                }
                #expect(hub.isRunning, "\(hub.diagnostics)")
                #expect(!directoryEntries(hubDirectory).contains("doomed.bin"), "\(directoryEntries(hubDirectory))")
            }
        }
    }
}
