import Foundation
import NearbyCore
import NearbySecurity
import NearbyWire

/// The sending side's crypto stage on its own: `OutboundFrameWriter` (the stack's writer: it takes each frame in
/// order, reserves its sequence number, seals it and writes it) over a channel that drops every frame, fed 64 KiB
/// PAYLOAD_TRANSFER chunks back to back by one producer, as a file's sender does. Run with one sealing task (the
/// writer seals each frame itself) and with several (large frames sealed on that many tasks at once, written in
/// order), so the figure shows what parallel sealing gives beyond the one-core `crypto_limit`.
enum SealingBench {
    /// MB/s of chunks sealed and "written" with `tasks` sealing tasks; nil when a frame failed.
    static func measure(bytes: Int, tasks: Int) async -> Double? {
        let chunk = Data(repeating: 0xA5, count: CryptoLimits.chunkSize)
        let count = max(bytes / CryptoLimits.chunkSize, 64)
        let channel = DiscardingChannel()
        let secret = (0..<32).map { UInt8($0) }
        let secure = SecureContextBox(channel: D2DSecureChannel(nextProtocolSecret: secret, role: .client))
        let writer = OutboundFrameWriter(channel: channel, secure: secure, sealingWidth: tasks)
        let header = OfflineFrames.payloadHeader(
            id: 1, type: .file, totalSize: Int64(count * CryptoLimits.chunkSize), fileName: "bench.bin",
            parentFolder: nil, lastModifiedMillis: nil)
        let start = now()
        // Owned here: awaited below, and it ends once the end marker queued after the last chunk is written.
        let run = Task { await writer.run() }
        var offset: Int64 = 0
        for index in 0..<count {
            let frame = OfflineFrames.payloadData(header: header, offset: offset, body: chunk, index: Int32(index), isLast: false)
            await writer.enqueueSealed(frame)
            offset += Int64(chunk.count)
        }
        writer.finishAfterQueued()
        let failure = await run.value
        let seconds = now() - start
        guard failure == nil, channel.frames == count else { return nil }
        return Double(count * CryptoLimits.chunkSize) / Benchmarks.megabyte / seconds
    }

    /// Two `parallel_sealing` lines: `tasks` sealing tasks against the one-core `crypto_limit`, and against the
    /// same writer with one sealing task.
    static func emit(bytes: Int, cryptoLimit: Double?, to report: Report) async {
        let tasks = max(2, ProcessInfo.processInfo.activeProcessorCount)
        let one = await measure(bytes: bytes, tasks: 1)
        let many = await measure(bytes: bytes, tasks: tasks)
        let note = [("tasks", "\(tasks)"), ("cores", "\(ProcessInfo.processInfo.activeProcessorCount)")]
        report.emit(Figure(metric: "parallel_sealing", value: many, unit: "MB/s", baseline: "crypto_limit",
                           baselineValue: cryptoLimit, note: note))
        report.emit(Figure(metric: "parallel_sealing", value: many, unit: "MB/s", baseline: "one_task",
                           baselineValue: one, note: note))
    }
}

/// A channel that counts the frames written to it and drops them.
final class DiscardingChannel: EndpointChannel {
    let medium = MediumKind.wifiLAN
    let peerDescription = "discard"
    private let count = LockedValue(0)

    var frames: Int { count.withLock { $0 } }

    func readFrame() async throws -> [UInt8]? { nil }
    func writeFrame(_ body: [UInt8]) async throws { count.withLock { $0 += 1 } }
    func close() async {}
}
