import Foundation
import NearbyTestSupport
import NearbyWire
import Testing

extension WiFiLANIntegration {
    /// Transfers between two `nearby` processes over a link that breaks (docs/LINK-SAFETY.md): a relay between
    /// `nearby send` and `nearby advertise --accept` resets the TCP connection (RST) at 40 % of a 200 MB file, once,
    /// three times, or for good; or throttles the link while the sender leaves right after its last payload.
    @Suite("Transfers over links that break", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct LinkSafetyTests {
        static let fileSize = 200 * 1024 * 1024

        /// Starts `nearby advertise --accept` and a relay in front of it.
        static func advertiserBehindRelay(
            _ scratch: Scratch, cutAt cuts: [Int] = [], refuseAfterCuts: Bool = false, rate: Int? = nil,
            extra: [String] = []
        ) async throws -> (advertiser: CLIProcess, relay: RelayProcess, serviceID: String, receiveDirectory: URL) {
            let serviceID = IntegrationEnvironment.uniqueServiceID("link")
            let receiveDirectory = try scratch.directory("received")
            let advertiser = try scratch.launchCLI("advertiser", [
                "advertise", "--service-id", serviceID, "--name", "link-target", "--accept",
                "--receive-dir", receiveDirectory.path, "--json",
            ] + extra)
            let advertising = try await advertiser.waitForEvent("advertising")
            let port = Int(try #require(advertising.int("port"), "\(advertising)"))
            let relay = try await RelayProcess.launch(to: port, cutAt: cuts, refuseAfterCuts: refuseAfterCuts, rate: rate)
            return (advertiser, relay, serviceID, receiveDirectory)
        }

        static func cutsAt40Percent(count: Int) -> [Int] {
            // The first at 40 %, the others 10 % of the file apart.
            (0..<count).map { fileSize * 4 / 10 + $0 * fileSize / 10 }
        }

        func rideOut(cuts: Int) async throws {
            try await withScratch(timeout: 240, "a 200 MB file cut \(cuts) times") { scratch in
                let file = try await scratch.urandomFile("big.bin", size: Self.fileSize)
                let digest = try await sha256Hex(of: file)
                let (advertiser, relay, serviceID, receiveDirectory) = try await Self.advertiserBehindRelay(
                    scratch, cutAt: Self.cutsAt40Percent(count: cuts))
                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--address", "127.0.0.1:\(relay.port)", "--name", "cut-sender",
                    "--file", file.path, "--accept", "--json",
                ])
                #expect(try await sender.waitForExit(timeout: 200) == 0, "\(sender.diagnostics)")
                #expect(sender.events("reconnecting").count == cuts, "\(sender.diagnostics)")
                #expect(sender.events("reconnected").count == cuts, "\(sender.diagnostics)")
                let sent = try #require(sender.events("payload_sent").first, "\(sender.diagnostics)")
                #expect(sent.string("sha256") == digest)

                let received = try await advertiser.waitForEvent("payload_received", timeout: 30) { $0.string("type") == "file" }
                #expect(received.string("sha256") == digest, "\(advertiser.diagnostics)")
                #expect(received.int("size") == Int64(Self.fileSize))
                let path = try #require(received.string("path"))
                #expect(try await sha256Hex(of: URL(fileURLWithPath: path)) == digest)
                #expect(advertiser.events("reconnected").count == cuts, "\(advertiser.diagnostics)")
                #expect(relay.cuts == cuts)
                let forwarded = try await relay.stop()
                // What was sent twice is what was in flight at each cut: a few chunks, far below 10 %.
                #expect(Double(forwarded) < Double(Self.fileSize) * 1.1, "forwarded \(forwarded) bytes")
                #expect(!directoryEntries(receiveDirectory).contains { $0.hasSuffix(".partial") })
            }
        }

        @Test("a 200 MB file cut once at 40 % completes intact")
        func cutOnce() async throws {
            try await rideOut(cuts: 1)
        }

        @Test("a 200 MB file cut three times completes intact with less than 1.1× the bytes")
        func cutThreeTimes() async throws {
            try await rideOut(cuts: 3)
        }

        @Test("a link cut for good: the sender fails after the window and no file appears under its name")
        func cutForGood() async throws {
            try await withScratch(timeout: 120, "a link cut for good") { scratch in
                let file = try scratch.sparseFile("lost.bin", size: Self.fileSize)
                let (advertiser, relay, serviceID, receiveDirectory) = try await Self.advertiserBehindRelay(
                    scratch, cutAt: Self.cutsAt40Percent(count: 1), refuseAfterCuts: true,
                    extra: ["--reconnect-window", "3"])
                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--address", "127.0.0.1:\(relay.port)", "--name", "lost-sender",
                    "--file", file.path, "--accept", "--json", "--reconnect-window", "3",
                ])
                #expect(try await sender.waitForExit(timeout: 100) == 1, "\(sender.diagnostics)")
                #expect(sender.events("reconnecting").count == 1)
                #expect(sender.events("reconnected").isEmpty)
                try await advertiser.waitForEvent("disconnected", timeout: 30)
                let failed = try await advertiser.waitForEvent("transfer_update", timeout: 30) {
                    $0.string("status") == "failure"
                }
                #expect(failed.int("total") == Int64(Self.fileSize))
                _ = try await eventually(within: 10, "no file and no partial file: \(directoryEntries(receiveDirectory))") {
                    directoryEntries(receiveDirectory).isEmpty ? true : nil
                }
                _ = try await relay.stop()
            }
        }

        @Test("a receiver killed mid-file and restarted on the same port and folder gets the rest of the file")
        func receiverRestarted() async throws {
            try await withScratch(timeout: 180, "a receiver killed and restarted mid-file") { scratch in
                let file = try await scratch.urandomFile("restart.bin", size: Self.fileSize)
                let digest = try await sha256Hex(of: file)
                let serviceID = IntegrationEnvironment.uniqueServiceID("restart")
                let receiveDirectory = try scratch.directory("received")
                let arguments = [
                    "advertise", "--service-id", serviceID, "--name", "restart-target", "--accept",
                    "--receive-dir", receiveDirectory.path, "--json",
                ]
                let first = try scratch.launchCLI("advertiser-1", arguments)
                let port = Int(try #require(try await first.waitForEvent("advertising").int("port")))
                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--address", "127.0.0.1:\(port)", "--name", "restart-sender",
                    "--file", file.path, "--accept", "--json",
                ])
                try await first.waitForEvent("transfer_update", timeout: 60) {
                    ($0.int("bytes") ?? 0) > Int64(Self.fileSize / 4) && $0.string("status") == "in_progress"
                }
                first.signal(SIGKILL)
                _ = try await first.waitForExit()
                let kept = directoryEntries(receiveDirectory)
                #expect(kept.contains { $0.hasSuffix(".partial") } && kept.contains { $0.hasSuffix(".partial.resume") }, "\(kept)")
                try await sender.waitForEvent("reconnecting", timeout: 30)

                let second = try scratch.launchCLI("advertiser-2", arguments + ["--port", "\(port)"])
                #expect(try await sender.waitForExit(timeout: 120) == 0, "\(sender.diagnostics)\n\(second.diagnostics)")
                #expect(sender.events("reconnected").count == 1, "\(sender.diagnostics)")
                let received = try await second.waitForEvent("payload_received", timeout: 30) { $0.string("type") == "file" }
                #expect(received.string("sha256") == digest, "\(second.diagnostics)")
                // It went on from where the first process stopped: the second one received far less than the file.
                let firstProgress = try #require(second.events("transfer_update").first { $0.string("status") == "in_progress" })
                #expect((firstProgress.int("bytes") ?? 0) > Int64(Self.fileSize / 4), "\(firstProgress)")
                _ = try await eventually(within: 10, "no partial file or record left: \(directoryEntries(receiveDirectory))") {
                    directoryEntries(receiveDirectory) == ["restart.bin"] ? true : nil
                }
            }
        }

        @Test("over a 1 MB/s link, a sender that leaves right after its last payload loses nothing")
        func slowLinkSenderLeavesAtOnce() async throws {
            try await withScratch(timeout: 120, "a sender leaving at once over a slow link") { scratch in
                let file = try scratch.randomFile("slow.bin", size: 3 * 1024 * 1024)
                let digest = try await sha256Hex(of: file)
                let (advertiser, relay, serviceID, _) = try await Self.advertiserBehindRelay(scratch, rate: 1_000_000)
                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--address", "127.0.0.1:\(relay.port)", "--name", "slow-sender",
                    "--file", file.path, "--bytes", "the very last payload", "--accept", "--json",
                ])
                #expect(try await sender.waitForExit(timeout: 60) == 0, "\(sender.diagnostics)")
                // The sender has exited: everything it sent must be there.
                let received = try await advertiser.waitForEvent("payload_received", timeout: 10) { $0.string("type") == "file" }
                #expect(received.string("sha256") == digest)
                let last = try await advertiser.waitForEvent("payload_received", timeout: 10) { $0.string("type") == "bytes" }
                #expect(last.string("sha256") == Hex.encode(SHA256Digest.hash(utf8: "the very last payload")))
                let goodbye = try await advertiser.waitForEvent("disconnected", timeout: 10)
                #expect(goodbye.fields["error"] == .null, "a clean goodbye: \(goodbye)")
                _ = try await relay.stop()
            }
        }
    }
}
