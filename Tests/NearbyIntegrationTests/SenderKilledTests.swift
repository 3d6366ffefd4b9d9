import Foundation
import NearbyConnections
import NearbyTestSupport
import Testing

extension WiFiLANIntegration {
    /// A CLI sender killed with SIGKILL in the middle of a 200 MB file.
    @Suite("Sender killed mid-file", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct SenderKilledTests {
        @Test("the in-process receiver reports failure and keeps no file under the final name")
        func senderKilledMidFile() async throws {
            try await withScratch(timeout: 120, "sender killed mid-file") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("kill")
                let receiveDirectory = try scratch.directory("received")
                let receiver = try Peer(scratch, serviceID: serviceID, receiveDirectory: receiveDirectory)
                let (_, port) = try await receiver.advertise("kill-target", scratch)
                let source = try scratch.sparseFile("doomed.bin", size: 200 * 1024 * 1024)

                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--address", "127.0.0.1:\(port)", "--name", "doomed",
                    "--file", source.path, "--accept", "--json",
                ])
                let (senderID, _) = try await receiver.answerRequest(accept: true)
                let (payloadID, _) = try await receiver.waitForTransfer(nil, outgoing: false, "the file's first bytes") {
                    $0.isProgress
                }
                sender.signal(SIGKILL)
                #expect(try await sender.waitForExit() == 128 + SIGKILL)

                let (_, outcome) = try await receiver.waitForTransfer(
                    payloadID, outgoing: false, timeout: 60, "the receiver's outcome") { !$0.isProgress }
                #expect(outcome == .failure)
                try await receiver.waitForState(.disconnected, of: senderID)
                #expect(!directoryEntries(receiveDirectory).contains("doomed.bin"), "\(directoryEntries(receiveDirectory))")
                _ = try await eventually(within: 10, "the partial file to go: \(directoryEntries(receiveDirectory))") {
                    directoryEntries(receiveDirectory).contains { $0.hasSuffix(".partial") } ? nil : true
                }
            }
        }
    }
}
