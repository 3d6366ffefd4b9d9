import Foundation
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyWire

@testable import NearbyQuickShare

/// Whether `scripts/with-test-network.sh` is up (private namespace with its own avahi-daemon).
var inTestNetwork: Bool { ProcessInfo.processInfo.environment["NEARBY_TEST_NETNS"] != nil }

/// Collects Quick Share events in the background so tests can wait for them with a bound.
actor QuickShareEventLog {
    private(set) var events: [QuickShareEvent] = []
    private var consumer: Task<Void, Never>?

    static func start(_ stream: AsyncStream<QuickShareEvent>) async -> QuickShareEventLog {
        let log = QuickShareEventLog()
        await log.consume(stream)
        return log
    }

    private func consume(_ stream: AsyncStream<QuickShareEvent>) {
        consumer = Task {
            for await event in stream { self.append(event) }
        }
    }

    private func append(_ event: QuickShareEvent) { events.append(event) }

    func stop() { consumer?.cancel() }

    /// Waits up to `seconds` for an event `match` accepts.
    func waitFor<Value>(within seconds: Double = 30, _ what: String, _ match: (QuickShareEvent) -> Value?) async throws -> Value {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            if let value = events.lazy.compactMap(match).first { return value }
            guard ContinuousClock.now < deadline else {
                throw TestTimeout(description: "timed out after \(seconds) s waiting for \(what); saw \(events.suffix(12))")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The result of the share with `endpointID`, once it finished.
    func result(of endpointID: String? = nil, within seconds: Double = 60) async throws -> QuickShareResult {
        try await waitFor(within: seconds, "the share to finish") { event in
            if case .finished(let id, let result) = event, endpointID == nil || id == endpointID { return result }
            return nil
        }
    }

    /// Every file received, by name.
    var receivedFiles: [String: URL] {
        var files: [String: URL] = [:]
        for case .fileReceived(_, let file, let url) in events { files[file.name] = url }
        return files
    }
}

/// A temporary directory that goes away at the end of the test.
final class QuickShareScratch: Sendable {
    let root: URL

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/nearby-qs.XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw TestTimeout(description: "mkdtemp failed") }
        root = URL(fileURLWithPath: String(cString: made), isDirectory: true)
    }

    func directory(_ name: String) throws -> URL {
        let url = root.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A file of `size` seeded random bytes.
    func file(_ name: String, size: Int, seed: UInt64 = 7) throws -> URL {
        let url = root.appendingPathComponent(name)
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var generator = SeededGenerator(seed: seed)
        var remaining = size
        var words = [UInt64](repeating: 0, count: 1 << 17)
        while remaining > 0 {
            for index in words.indices { words[index] = generator.next() }
            let count = min(remaining, words.count * 8)
            try words.withUnsafeBytes { try handle.write(contentsOf: Data($0.prefix(count))) }
            remaining -= count
        }
        return url
    }

    /// Every entry under the root, as relative paths.
    func tree() -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        var paths: [String] = []
        while let path = enumerator?.nextObject() as? String { paths.append(path) }
        return paths.sorted()
    }

    func remove() { try? FileManager.default.removeItem(at: root) }
}

/// SHA-256 of a file, hex.
func sha256Hex(_ url: URL) throws -> String {
    let handle = try FileHandle(forReadingFrom: url)
    defer { try? handle.close() }
    var digest = SHA256Digest()
    while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { digest.update(chunk) }
    return Hex.encode(digest.finalize())
}

/// A receiver and a sender that has found it, each with its event log.
struct QuickSharePair {
    let receiver: QuickShareReceiver
    let sender: QuickShareSender
    let receiverLog: QuickShareEventLog
    let senderLog: QuickShareEventLog
    let receiverID: String
    let receiveDirectory: URL

    /// Starts a receiver (uniquely named) and a sender, and waits until the sender found it.
    static func start(
        scratch: QuickShareScratch, receiveDirectory: URL? = nil, configure: (inout QuickShareOptions) -> Void = { _ in }
    ) async throws -> QuickSharePair {
        let directory = try receiveDirectory ?? scratch.directory("inbox")
        let name = "qs-\(UUID().uuidString.prefix(8))"
        var receiverOptions = QuickShareOptions(deviceName: name, deviceType: .laptop, receiveDirectory: directory, wakeUpBeacon: false)
        configure(&receiverOptions)
        let receiver = QuickShareReceiver(options: receiverOptions)
        let receiverLog = await QuickShareEventLog.start(receiver.events)
        let advertising = try await receiver.start()
        let sender = QuickShareSender(
            options: QuickShareOptions(deviceName: "sender-\(UUID().uuidString.prefix(4))", deviceType: .phone, wakeUpBeacon: false))
        let senderLog = await QuickShareEventLog.start(sender.events)
        try await sender.startDiscovery()
        _ = try await senderLog.waitFor("the receiver to be found") { event in
            if case .deviceFound(let device) = event, device.endpointID == advertising.endpointID { return device }
            return nil
        }
        return QuickSharePair(
            receiver: receiver, sender: sender, receiverLog: receiverLog, senderLog: senderLog,
            receiverID: advertising.endpointID, receiveDirectory: directory)
    }

    func stop() async {
        await sender.stop()
        await receiver.stop()
        await senderLog.stop()
        await receiverLog.stop()
    }
}
