import Foundation
import NearbyWire
import Testing

extension WiFiLANIntegration {
    /// `nearby quickshare receive` and `nearby quickshare send` as two processes: files and a text arrive intact, both
    /// print the same PIN; a receiver with no terminal and no `--accept` rejects; the beacon line says why it is off.
    @Suite("nearby quickshare receive ↔ send", .enabled(if: IntegrationEnvironment.inTestNetwork))
    struct QuickShareCLITests {
        @Test("files and a text arrive intact; both sides print the same PIN; the beacon is reported off without bluetoothd")
        func sendBetweenTwoProcesses() async throws {
            try await withScratch(timeout: 120, "Quick Share CLI") { scratch in
                let name = "qs-cli-\(UUID().uuidString.prefix(6))"
                let inbox = try scratch.directory("inbox")
                let photo = try scratch.randomFile("photo.jpg", size: 3 * 1024 * 1024 + 5)
                let empty = try scratch.randomFile("empty.txt", size: 0)
                let receiver = try scratch.launchCLI("qs-receiver", [
                    "quickshare", "receive", "--name", name, "--accept", "--once", "--receive-dir", inbox.path, "--json",
                ])
                let advertising = try await receiver.waitForEvent("quickshare_advertising")
                #expect(advertising.string("service_type") == "_FC9F5ED42C8A._tcp")
                #expect(advertising.string("name") == name)
                // The test network has no bluetoothd: the beacon is off, and the line says why.
                let beacon = try await receiver.waitForEvent("beacon")
                #expect(beacon.string("status") == "off")
                #expect(beacon.string("reason")?.isEmpty == false)

                let sender = try scratch.launchCLI("qs-sender", [
                    "quickshare", "send", photo.path, empty.path, "--text", "https://example.com/x", "--to", name,
                    "--name", "cli-sender", "--json", "--no-beacon",
                ])
                #expect(try await sender.waitForExit(timeout: 90) == 0, "\(sender.diagnostics)")
                #expect(try await receiver.waitForExit(timeout: 30) == 0, "\(receiver.diagnostics)")

                let sentPIN = try await sender.waitForEvent("connected").string("pin")
                let receivedPIN = try await receiver.waitForEvent("connected").string("pin")
                #expect(sentPIN != nil && sentPIN == receivedPIN)
                #expect(try await receiver.waitForEvent("share_offered").string("pin") == sentPIN)
                #expect(try await sender.waitForEvent("share_finished").string("result") == "completed")
                #expect(try await receiver.waitForEvent("share_finished").string("result") == "completed")

                let photoEvent = try await receiver.waitForEvent("file_received") { $0.string("name") == "photo.jpg" }
                #expect(photoEvent.string("sha256") == (try await sha256Hex(of: photo)))
                #expect(photoEvent.string("path") == inbox.appendingPathComponent("photo.jpg").path)
                let emptyEvent = try await receiver.waitForEvent("file_received") { $0.string("name") == "empty.txt" }
                #expect(emptyEvent.int("size") == 0)
                let text = try await receiver.waitForEvent("text_received")
                #expect(text.string("text") == "https://example.com/x")
                #expect(text.string("kind") == "url")
                #expect(try FileManager.default.contentsOfDirectory(atPath: inbox.path).sorted() == ["empty.txt", "photo.jpg"])
            }
        }

        @Test("a receiver without a terminal and without --accept rejects, and the sender exits 1")
        func rejectsWithoutATerminal() async throws {
            try await withScratch(timeout: 90, "Quick Share CLI reject") { scratch in
                let name = "qs-cli-\(UUID().uuidString.prefix(6))"
                let inbox = try scratch.directory("inbox")
                let file = try scratch.randomFile("a.bin", size: 1000)
                let receiver = try scratch.launchCLI("qs-receiver", [
                    "quickshare", "receive", "--name", name, "--once", "--receive-dir", inbox.path, "--json", "--no-beacon",
                ])
                _ = try await receiver.waitForEvent("quickshare_advertising")
                let sender = try scratch.launchCLI("qs-sender", [
                    "quickshare", "send", file.path, "--to", name, "--json", "--no-beacon",
                ])
                #expect(try await sender.waitForExit(timeout: 60) == 1, "\(sender.diagnostics)")
                #expect(try await sender.waitForEvent("share_finished").string("result") == "rejected")
                #expect(try await receiver.waitForExit(timeout: 30) == 1, "\(receiver.diagnostics)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: inbox.path).isEmpty)
            }
        }
    }
}
