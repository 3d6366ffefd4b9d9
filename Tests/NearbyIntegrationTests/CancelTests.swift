import Foundation
import NearbyConnections
import Testing

extension WiFiLANIntegration {
    /// Cancelling a file mid-transfer, from either end, between two managers in this process (Avahi + TCP).
    @Suite("Cancel mid-file", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct CancelTests {
        enum Side: String, CaseIterable, Sendable {
            case sender, receiver
        }

        @Test("both sides see canceled, no file under its final name, no partial file left", arguments: Side.allCases)
        func cancelMidFile(by side: Side) async throws {
            try await withScratch(timeout: 120, "cancel by the \(side)") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("cancel-\(side)")
                let receiveDirectory = try scratch.directory("received")
                let receiver = try Peer(scratch, serviceID: serviceID, receiveDirectory: receiveDirectory)
                let sender = try Peer(scratch, serviceID: serviceID)
                try await receiver.advertise("cancel-target", scratch)
                let pair = try await ConnectedPair.connect(advertiser: receiver, discoverer: sender, scratch)

                // Far bigger than what moves before the cancel lands; sparse, so it costs no disk on the sending side.
                let source = try scratch.sparseFile("big.bin", size: 512 * 1024 * 1024)
                let payloadID = try await sender.manager.sendResource(at: source, withName: "big.bin", to: pair.advertiserID)
                try await receiver.waitForTransfer(payloadID, outgoing: false, "receiver progress") { $0.isProgress }

                switch side {
                case .sender: await sender.manager.cancel(payloadID)
                case .receiver: await receiver.manager.cancel(payloadID)
                }

                let (_, receiverOutcome) = try await receiver.waitForTransfer(
                    payloadID, outgoing: false, timeout: 60, "the receiver's outcome") { !$0.isProgress }
                let (_, senderOutcome) = try await sender.waitForTransfer(
                    payloadID, outgoing: true, timeout: 60, "the sender's outcome") { !$0.isProgress }
                #expect(receiverOutcome == .canceled)
                #expect(senderOutcome == .canceled)
                #expect(!receiver.log.contains {
                    if case .fileReceived = $0 { return true }
                    return false
                })
                let entries = directoryEntries(receiveDirectory)
                #expect(!entries.contains("big.bin"), "\(entries)")
                #expect(!entries.contains { $0.hasSuffix(".partial") }, "\(entries)")

                // The connection outlives the cancelled payload.
                try await sender.manager.send(Data("still here".utf8), to: pair.advertiserID)
                try await receiver.log.wait("bytes after the cancel") { event -> Bool? in
                    if case .bytesReceived(_, _, let data) = event, data == Data("still here".utf8) { return true }
                    return nil
                }
            }
        }
    }
}

extension TransferUpdate {
    /// Whether this is an in-progress update rather than an outcome.
    var isProgress: Bool {
        if case .progress = self { return true }
        return false
    }
}
