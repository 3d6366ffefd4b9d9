import Foundation
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyQuickShare

/// A hostile sender that speaks Nearby Connections correctly (real UKEY2, real encryption, over Wi-Fi LAN) and then
/// sends Quick Share frames our sender never would. The receiver must refuse each with a clear result, write
/// nothing outside (and nothing unannounced inside) its receive directory, and stay up for the next sender.
@Suite(
    "Quick Share receiver against a hostile sender", .serialized, .timeLimit(.minutes(3)),
    .enabled(if: inTestNetwork, "needs scripts/with-test-network.sh (private avahi-daemon)"))
struct QuickShareHostileSenderTests {
    /// A Nearby Connections peer on service NearbySharing that connects to `receiverID` and lets the test send
    /// raw frames and payloads.
    final class HostilePeer: Sendable {
        let manager: ConnectionManager
        let discoverer: Discoverer
        let receiverID: String
        let events: StreamRecorder<ConnectionEvent>

        init(receiverID: String) async throws {
            manager = ConnectionManager(serviceID: QuickShareServiceName.serviceID, strategy: .pointToPoint)
            discoverer = Discoverer(connectionManager: manager)
            self.receiverID = receiverID
            let stream = manager.events
            events = await StreamRecorder.start(AsyncThrowingStream { continuation in
                // Owner: the recorder; it ends when the manager's stream does (the peer is shut down).
                let task = Task {
                    for await event in stream { continuation.yield(event) }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
            })
            try await discoverer.startDiscovery()
            _ = try await events.waitFor(within: 30, "the receiver") { event -> Bool? in
                if case .endpointFound(let id, _, _) = event, id == receiverID { return true }
                return nil
            }
            var random = SeededGenerator(seed: 5)
            let info = QuickShareEndpointInfo.visible(name: "hostile", deviceType: .phone, using: &random)
            try await discoverer.requestConnection(to: receiverID, using: Data(info.bytes))
            _ = try await events.waitFor("the handshake") { event -> Bool? in
                if case .connectionRequested(let id, _, _, _) = event, id == receiverID { return true }
                return nil
            }
            try await manager.accept(receiverID)
            _ = try await events.waitFor("connected") { event -> Bool? in
                if case .stateChanged(let id, .connected, _) = event, id == receiverID { return true }
                return nil
            }
        }

        func send(_ frame: QuickShareFrame) async throws {
            try await manager.send(Data(frame.bytes), to: receiverID)
        }

        /// PAIRED_KEY_ENCRYPTION and PAIRED_KEY_RESULT, as a well-behaved sender does.
        func exchangeKeys() async throws {
            var random = SeededGenerator(seed: 6)
            try await send(.randomPairedKeyEncryption(using: &random))
            try await send(.pairedKeyResult(.unable))
        }

        /// Waits for the receiver's RESPONSE and returns its status.
        func response() async throws -> ProtoSharingResponse.Status {
            try await events.waitFor("a RESPONSE") { event in
                guard case .bytesReceived(_, _, let data) = event,
                    case .response(let status) = try? QuickShareFrame(decoding: Array(data))
                else { return nil }
                return status
            }
        }

        func disconnected() async throws {
            _ = try await events.waitFor("the receiver to hang up") { event -> Bool? in
                if case .stateChanged(_, .disconnected, _) = event { return true }
                return nil
            }
        }

        func stop() async {
            await manager.shutdown()
            await events.stop()
        }
    }

    static func introduction(_ files: [(name: String, payloadID: Int64, size: Int64)]) -> ProtoSharingIntroduction {
        var introduction = ProtoSharingIntroduction()
        introduction.useCase = .nearbyShare
        introduction.files = files.map { entry in
            var file = ProtoSharingFileMetadata()
            file.name = entry.name
            file.payloadID = entry.payloadID
            file.size = entry.size
            file.id = entry.payloadID + 1
            return file
        }
        return introduction
    }

    func withReceiver(_ body: (QuickSharePair.ReceiverOnly, QuickShareScratch) async throws -> Void) async throws {
        let scratch = try QuickShareScratch()
        defer { scratch.remove() }
        let receiver = try await QuickSharePair.ReceiverOnly.start(scratch: scratch)
        do {
            try await body(receiver, scratch)
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    @Test func tenThousandFilesAreRefusedAsUnsupported() async throws {
        try await withReceiver { receiver, _ in
            let peer = try await HostilePeer(receiverID: receiver.endpointID)
            try await peer.exchangeKeys()
            let files = (1...10_000).map { (name: "f\($0)", payloadID: Int64($0), size: Int64(1)) }
            try await peer.send(.introduction(Self.introduction(files)))
            #expect(try await peer.response() == .unsupportedAttachmentType)
            let result = try await receiver.log.result()
            guard case .refused(.unsupportedAttachmentType, let reason) = result else {
                Issue.record("\(result)")
                return
            }
            #expect(reason?.contains("10000 attachments") == true)
            try await peer.disconnected()
            await peer.stop()
            #expect(try FileManager.default.contentsOfDirectory(atPath: receiver.directory.path).isEmpty)
        }
    }

    @Test func namesThatClimbOrHoldControlCharactersAreRefused() async throws {
        try await withReceiver { receiver, scratch in
            for name in ["../../escaped.txt", "a/b.txt", "bell\u{7}.txt"] {
                let peer = try await HostilePeer(receiverID: receiver.endpointID)
                try await peer.exchangeKeys()
                try await peer.send(.introduction(Self.introduction([(name, 77, 4)])))
                #expect(try await peer.response() == .unsupportedAttachmentType)
                try await peer.disconnected()
                await peer.stop()
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: receiver.directory.path).isEmpty)
            #expect(scratch.tree() == ["inbox"], "nothing written anywhere else")
        }
    }

    @Test func sizesOfMinusOneAndTwoToTheSixtySecondAreRefused() async throws {
        try await withReceiver { receiver, _ in
            for size: Int64 in [-1, 1 << 62] {
                let peer = try await HostilePeer(receiverID: receiver.endpointID)
                try await peer.exchangeKeys()
                try await peer.send(.introduction(Self.introduction([("a.bin", 5, size)])))
                #expect(try await peer.response() == .unsupportedAttachmentType)
                try await peer.disconnected()
                await peer.stop()
            }
        }
    }

    @Test func aPayloadWhoseIDWasNotAnnouncedIsRefusedAndNothingIsWritten() async throws {
        try await withReceiver { receiver, scratch in
            let peer = try await HostilePeer(receiverID: receiver.endpointID)
            try await peer.exchangeKeys()
            try await peer.send(.introduction(Self.introduction([("announced.bin", 1001, 4)])))
            let offer = try await receiver.log.waitFor("the offer") { if case .offerReceived(let share) = $0 { share } else { nil } }
            try await receiver.receiver.accept(offer.sender.endpointID)
            #expect(try await peer.response() == .accept)
            let rogue = scratch.root.appendingPathComponent("rogue.bin")
            try Data("evil".utf8).write(to: rogue)
            try await peer.manager.sendResource(at: rogue, withName: "rogue.bin", to: receiver.endpointID, id: 2002)
            let result = try await receiver.log.result()
            guard case .failed(let error) = result else {
                Issue.record("\(result)")
                return
            }
            let seen = await receiver.log.events
            #expect(error.code == .invalidFrame, "\(seen)")
            #expect(error.message.contains("file payload 2002 was not announced"), "\(error)")
            try await peer.disconnected()
            await peer.stop()

            // The same with a climbing folder in the payload header: the engine itself refuses the frame.
            let second = try await HostilePeer(receiverID: receiver.endpointID)
            try await second.exchangeKeys()
            try await second.send(.introduction(Self.introduction([("announced.bin", 3001, 4)])))
            let offer2 = try await receiver.log.waitFor("the second offer") { event in
                if case .offerReceived(let share) = event, share.offer.files.first?.payloadID == 3001 { return share }
                return nil
            }
            try await receiver.receiver.accept(offer2.sender.endpointID)
            #expect(try await second.response() == .accept)
            try await second.manager.sendResource(at: rogue, withName: "../rogue.bin", to: receiver.endpointID, id: 3001)
            let secondResult = try await receiver.log.waitFor("the second share to end") { event -> QuickShareResult? in
                if case .finished(let id, let result) = event, id == offer2.sender.endpointID, !(id == offer.sender.endpointID) {
                    return result
                }
                return nil
            }
            guard case .failed(let secondError) = secondResult else {
                Issue.record("\(secondResult)")
                return
            }
            #expect(secondError.code == .invalidFrame, "\(secondError)")
            try await second.disconnected()
            await second.stop()
            _ = try await eventually(within: 10, "the receive directory to be empty") {
                (try FileManager.default.contentsOfDirectory(atPath: receiver.directory.path)).isEmpty ? true : nil
            }
            #expect(scratch.tree() == ["inbox", "rogue.bin"])
        }
    }

    @Test func framesOutOfOrderAreRefusedAndTheReceiverServesTheNextSender() async throws {
        try await withReceiver { receiver, scratch in
            let peer = try await HostilePeer(receiverID: receiver.endpointID)
            // An introduction before the paired key exchange.
            try await peer.send(.introduction(Self.introduction([("early.bin", 3, 1)])))
            let result = try await receiver.log.result()
            guard case .failed(let error) = result else {
                Issue.record("\(result)")
                return
            }
            #expect(error.message.contains("INTRODUCTION arrived while waiting for PAIRED_KEY_ENCRYPTION"))
            try await peer.disconnected()
            await peer.stop()

            // A well-behaved sender is served afterwards.
            let file = try scratch.file("after.bin", size: 10)
            let sender = QuickShareSender(options: QuickShareOptions(deviceName: "good", wakeUpBeacon: false))
            let senderLog = await QuickShareEventLog.start(sender.events)
            try await sender.startDiscovery()
            _ = try await senderLog.waitFor("the receiver") { event -> Bool? in
                if case .deviceFound(let device) = event, device.endpointID == receiver.endpointID { return true }
                return nil
            }
            try await sender.send([.file(file)], to: receiver.endpointID)
            let share = try await receiver.log.waitFor("the offer") { if case .offerReceived(let share) = $0 { share } else { nil } }
            try await receiver.receiver.accept(share.sender.endpointID)
            guard case .completed = try await senderLog.result() else {
                Issue.record("\(await senderLog.events)")
                return
            }
            await sender.stop()
            await senderLog.stop()
        }
    }
}

extension QuickSharePair {
    /// A receiver alone, with its event log.
    struct ReceiverOnly {
        let receiver: QuickShareReceiver
        let log: QuickShareEventLog
        let endpointID: String
        let directory: URL

        static func start(scratch: QuickShareScratch) async throws -> ReceiverOnly {
            let directory = try scratch.directory("inbox")
            let receiver = QuickShareReceiver(
                options: QuickShareOptions(
                    deviceName: "qs-\(UUID().uuidString.prefix(8))", receiveDirectory: directory, wakeUpBeacon: false))
            let log = await QuickShareEventLog.start(receiver.events)
            let advertising = try await receiver.start()
            return ReceiverOnly(receiver: receiver, log: log, endpointID: advertising.endpointID, directory: directory)
        }

        func stop() async {
            await receiver.stop()
            await log.stop()
        }
    }
}
