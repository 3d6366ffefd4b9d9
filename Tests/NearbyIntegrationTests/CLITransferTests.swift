import Foundation
import NearbyWire
import Testing

extension WiFiLANIntegration {
    /// Two `nearby` processes: one advertises and accepts, the other finds it by name and sends bytes, a 50 MB
    /// file and a stream. `nearby discover` sees the advertiser meanwhile.
    @Suite("nearby advertise ↔ nearby send", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct CLITransferTests {
        @Test("codes match; bytes, a 50 MB file and a stream arrive intact with monotonic progress; discover sees the advertiser")
        func transferBetweenTwoProcesses() async throws {
            try await withScratch(timeout: 180, "CLI transfer") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("cli")
                let advertiserName = "adv-\(UUID().uuidString.prefix(6))"
                let receiveDirectory = try scratch.directory("received")
                let file = try scratch.randomFile("fifty.bin", size: 50 * 1024 * 1024)
                let streamSource = try scratch.randomFile("stream.bin", size: 3 * 1024 * 1024 + 4321)
                let fileDigest = try await sha256Hex(of: file)
                let streamDigest = try await sha256Hex(of: streamSource)

                let advertiser = try scratch.launchCLI("advertiser", [
                    "advertise", "--service-id", serviceID, "--name", advertiserName, "--accept",
                    "--receive-dir", receiveDirectory.path, "--json",
                ])
                let advertising = try await advertiser.waitForEvent("advertising")
                let advertiserID = try #require(advertising.string("endpoint_id"), "\(advertising)")

                // A third process only looks.
                let discover = try scratch.launchCLI("discover", [
                    "discover", "--service-id", serviceID, "--timeout", "5", "--json",
                ])
                let found = try await discover.waitForEvent("endpoint_found") { $0.string("endpoint_id") == advertiserID }
                #expect(found.string("endpoint_info_hex")?.lowercased() == Hex.encode(Array(advertiserName.utf8)))
                #expect(found.string("medium") == "wifi-lan")
                #expect(try await discover.waitForExit(timeout: 30) == 0, "\(discover.diagnostics)")

                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--to-name", advertiserName, "--name", "sender-x",
                    "--bytes", "hello", "--file", file.path, "--stream", streamSource.path, "--accept", "--json",
                ])
                let senderStatus = try await sender.waitForExit(timeout: 120)
                #expect(senderStatus == 0, "\(sender.diagnostics)")

                // Both sides show the same verification code.
                let outgoing = try await sender.waitForEvent("connection_initiated", timeout: 5)
                let incoming = try await advertiser.waitForEvent("connection_initiated")
                #expect(outgoing.bool("incoming") == false)
                #expect(incoming.bool("incoming") == true)
                let digits = try #require(outgoing.string("digits"))
                #expect(digits.count == 4 && digits.allSatisfy(\.isASCII) && digits.allSatisfy(\.isNumber))
                #expect(incoming.string("digits") == digits)
                #expect(outgoing.string("token")?.count == 5)
                #expect(incoming.string("token") == outgoing.string("token"))
                #expect(outgoing.string("endpoint_id") == advertiserID)
                #expect(incoming.string("endpoint_info_hex")?.lowercased() == Hex.encode(Array("sender-x".utf8)))

                // The advertiser received all three payloads intact.
                let bytes = try await advertiser.waitForEvent("payload_received") { $0.string("type") == "bytes" }
                #expect(bytes.int("size") == 5)
                #expect(bytes.string("sha256") == Hex.encode(SHA256Digest.hash(utf8: "hello")))

                let received = try await advertiser.waitForEvent("payload_received", timeout: 60) { $0.string("type") == "file" }
                #expect(received.int("size") == Int64(50 * 1024 * 1024))
                #expect(received.string("sha256") == fileDigest)
                let path = try #require(received.string("path"), "\(received)")
                let receivedURL = URL(fileURLWithPath: path).resolvingSymlinksInPath()
                #expect(receivedURL.deletingLastPathComponent().path == receiveDirectory.resolvingSymlinksInPath().path)
                #expect(receivedURL.lastPathComponent == "fifty.bin")
                #expect(try await sha256Hex(of: receivedURL) == fileDigest)

                let stream = try await advertiser.waitForEvent("payload_received", timeout: 60) { $0.string("type") == "stream" }
                #expect(stream.int("size") == Int64(3 * 1024 * 1024 + 4321))
                #expect(stream.string("sha256") == streamDigest)

                // Per payload, the receiver's progress only grows and ends in success.
                for payload in [bytes, received, stream] {
                    let id = try #require(payload.text("payload_id"), "\(payload)")
                    try await advertiser.waitForEvent("transfer_update", timeout: 10) {
                        $0.text("payload_id") == id && $0.string("status") == "success"
                    }
                    let updates = advertiser.events("transfer_update").filter { $0.text("payload_id") == id }
                    let counts = updates.compactMap { $0.int("bytes") }
                    #expect(counts.count == updates.count, "transfer_update without bytes: \(updates)")
                    #expect(zip(counts, counts.dropFirst()).allSatisfy { $0 <= $1 }, "not monotonic: \(counts)")
                    #expect(updates.last?.string("status") == "success")
                    #expect(updates.dropLast().allSatisfy { $0.string("status") == "in_progress" }, "\(updates.map(\.line))")
                    #expect(updates.last?.int("bytes") == payload.int("size"))
                }

                // The sender reported each payload as sent, with the same digests.
                let sent = sender.events("payload_sent")
                #expect(Set(sent.compactMap { $0.string("type") }) == ["bytes", "file", "stream"], "\(sent)")
                #expect(sent.first { $0.string("type") == "file" }?.string("sha256") == fileDigest)
                #expect(sent.first { $0.string("type") == "stream" }?.string("sha256") == streamDigest)

                // Nothing half-written is left behind, and the advertiser is still up for the next peer.
                #expect(directoryEntries(receiveDirectory) == ["fifty.bin"])
                #expect(advertiser.isRunning, "\(advertiser.diagnostics)")
            }
        }
    }
}
