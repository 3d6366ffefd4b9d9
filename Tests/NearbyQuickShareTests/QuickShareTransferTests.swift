import Foundation
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyQuickShare

/// Our sender to our receiver over the real Wi-Fi LAN medium (Avahi and TCP in the test network): files of 0 and 1
/// bytes and several at once with a text, 300 MB, a rejection, a cancellation midway and a receiver without room.
@Suite(
    "Quick Share sender to receiver", .serialized, .timeLimit(.minutes(5)),
    .enabled(if: inTestNetwork, "needs scripts/with-test-network.sh (private avahi-daemon)"))
struct QuickShareTransferTests {
    @Test func filesOfZeroAndOneBytesSeveralFilesAndATextArriveIntactWithTheSamePIN() async throws {
        let scratch = try QuickShareScratch()
        defer { scratch.remove() }
        let empty = try scratch.file("empty.txt", size: 0)
        let one = try scratch.file("one.bin", size: 1, seed: 1)
        let chunky = try scratch.file("photo.jpg", size: 65_536 * 3 + 17, seed: 2)
        let pair = try await QuickSharePair.start(scratch: scratch)
        try await pair.sender.send(
            [.file(empty), .file(one), .file(chunky), .text("hello from Linux")], to: pair.receiverID)

        let share = try await pair.receiverLog.waitFor("the offer") { event in
            if case .offerReceived(let share) = event { return share }
            return nil
        }
        #expect(share.offer.files.map(\.name) == ["empty.txt", "one.bin", "photo.jpg"])
        #expect(share.offer.files.map(\.size) == [0, 1, 65_536 * 3 + 17])
        #expect(share.offer.files[2].mimeType == "image/jpeg" && share.offer.files[2].kind == .image)
        #expect(share.offer.texts.map(\.title) == ["hello from Linux"])
        #expect(share.sender.deviceType == .phone)
        try await pair.receiver.accept(share.sender.endpointID)

        let received = try await pair.receiverLog.result(within: 60)
        guard case .completed = received else {
            Issue.record("receiver: \(received)")
            return
        }
        let sent = try await pair.senderLog.result(within: 60)
        guard case .completed(let confirmed) = sent else {
            Issue.record("sender: \(sent)")
            return
        }
        #expect(confirmed, "the receiver hung up once it had everything")

        // The PIN is the same on both screens.
        let senderPIN = try await pair.senderLog.waitFor("connected") { if case .connected(_, let pin) = $0 { pin } else { nil } }
        let receiverPIN = try await pair.receiverLog.waitFor("connected") { if case .connected(_, let pin) = $0 { pin } else { nil } }
        #expect(senderPIN == receiverPIN && senderPIN.count == 4 && senderPIN.allSatisfy(\.isNumber))
        #expect(share.pin == senderPIN)

        let files = await pair.receiverLog.receivedFiles
        for source in [empty, one, chunky] {
            let url = try #require(files[source.lastPathComponent])
            #expect(url.deletingLastPathComponent().standardizedFileURL.path == pair.receiveDirectory.standardizedFileURL.path)
            #expect(try sha256Hex(url) == sha256Hex(source))
        }
        let text = try await pair.receiverLog.waitFor("the text") { if case .textReceived(_, _, let text) = $0 { text } else { nil } }
        #expect(text == "hello from Linux")
        // Nothing else in the receive directory: no temporary files left.
        #expect(try FileManager.default.contentsOfDirectory(atPath: pair.receiveDirectory.path).sorted()
            == ["empty.txt", "one.bin", "photo.jpg"])
        await pair.stop()
    }

    @Test func threeHundredMegabytesArriveIntact() async throws {
        let scratch = try QuickShareScratch()
        defer { scratch.remove() }
        let big = try scratch.file("big.bin", size: 300 * 1_000_000, seed: 300)
        let pair = try await QuickSharePair.start(scratch: scratch)
        try await pair.sender.send([.file(big)], to: pair.receiverID)
        let share = try await pair.receiverLog.waitFor("the offer") { if case .offerReceived(let share) = $0 { share } else { nil } }
        try await pair.receiver.accept(share.sender.endpointID)
        let result = try await pair.receiverLog.result(within: 240)
        guard case .completed = result else {
            Issue.record("receiver: \(result)")
            return
        }
        let url = try #require(await pair.receiverLog.receivedFiles["big.bin"])
        #expect(try sha256Hex(url) == sha256Hex(big))
        // Progress climbed to the total.
        let last = await pair.receiverLog.events.compactMap { event -> (Int64, Int64)? in
            if case .progress(_, let bytes, let total) = event { return (bytes, total) }
            return nil
        }.last
        #expect(last?.0 == 300 * 1_000_000 && last?.1 == 300 * 1_000_000)
        await pair.stop()
    }

    @Test func aRejectedShareEndsOnBothSidesWithNothingWritten() async throws {
        let scratch = try QuickShareScratch()
        defer { scratch.remove() }
        let file = try scratch.file("nope.bin", size: 1_000)
        let pair = try await QuickSharePair.start(scratch: scratch)
        try await pair.sender.send([.file(file)], to: pair.receiverID)
        let share = try await pair.receiverLog.waitFor("the offer") { if case .offerReceived(let share) = $0 { share } else { nil } }
        try await pair.receiver.reject(share.sender.endpointID)
        guard case .rejected = try await pair.senderLog.result() else {
            Issue.record("sender: \(await pair.senderLog.events)")
            return
        }
        guard case .rejected = try await pair.receiverLog.result() else {
            Issue.record("receiver: \(await pair.receiverLog.events)")
            return
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: pair.receiveDirectory.path).isEmpty)
        await pair.stop()
    }

    @Test func cancellingMidwayEndsBothSidesAndLeavesNoPartialFile() async throws {
        let scratch = try QuickShareScratch()
        defer { scratch.remove() }
        let file = try scratch.file("large.bin", size: 200 * 1_000_000, seed: 9)
        let pair = try await QuickSharePair.start(scratch: scratch)
        try await pair.sender.send([.file(file)], to: pair.receiverID)
        let share = try await pair.receiverLog.waitFor("the offer") { if case .offerReceived(let share) = $0 { share } else { nil } }
        try await pair.receiver.accept(share.sender.endpointID)
        _ = try await pair.receiverLog.waitFor("bytes to arrive") { event -> Bool? in
            if case .progress(_, let bytes, _) = event, bytes > 0 { return true }
            return nil
        }
        await pair.sender.cancel(pair.receiverID)
        guard case .canceled(byPeer: false) = try await pair.senderLog.result() else {
            Issue.record("sender: \(await pair.senderLog.events.suffix(5))")
            return
        }
        let received = try await pair.receiverLog.result()
        switch received {
        case .canceled(byPeer: true): break
        case .failed: break  // the connection closed before the CANCEL frame was read
        default: Issue.record("receiver: \(received)")
        }
        _ = try await eventually(within: 10, "the partial file to go") {
            (try FileManager.default.contentsOfDirectory(atPath: pair.receiveDirectory.path)).isEmpty ? true : nil
        }
        await pair.stop()
    }

    @Test func aReceiverWithoutRoomAnswersNotEnoughSpace() async throws {
        let scratch = try QuickShareScratch()
        defer { scratch.remove() }
        let file = try scratch.file("big.bin", size: 2_000_000)
        // A 1 MiB tmpfs as the receive directory where the namespace allows mounting; otherwise a reserve bigger
        // than the disk.
        let inbox = try scratch.directory("tiny")
        let mounted = mountTmpfs(at: inbox, size: "1m")
        defer { if mounted { unmount(inbox) } }
        let pair = try await QuickSharePair.start(scratch: scratch, receiveDirectory: inbox) { options in
            options.connectionLimits.minimumFreeDiskSpace = mounted ? 0 : Int64.max / 4
        }
        try await pair.sender.send([.file(file)], to: pair.receiverID)
        let senderResult = try await pair.senderLog.result()
        guard case .refused(let status, _) = senderResult, status == .notEnoughSpace else {
            Issue.record("sender: \(senderResult)")
            return
        }
        let receiverResult = try await pair.receiverLog.result()
        guard case .refused(.notEnoughSpace, let reason) = receiverResult else {
            Issue.record("receiver: \(receiverResult)")
            return
        }
        #expect(reason?.contains("2000000 bytes") == true)
        #expect(await !pair.receiverLog.events.contains { if case .offerReceived = $0 { true } else { false } })
        await pair.stop()
    }

    private func mountTmpfs(at url: URL, size: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/mount")
        process.arguments = ["-n", "-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", url.path]
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    private func unmount(_ url: URL) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/umount")
        process.arguments = ["-n", url.path]
        try? process.run()
        process.waitUntilExit()
    }
}
