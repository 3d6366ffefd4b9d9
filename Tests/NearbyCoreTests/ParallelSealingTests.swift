import Foundation
@testable import NearbyCore
import NearbySecurity
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

/// The writer seals large frames on several tasks at once (``SealingWidth``) and still writes every frame in the
/// order it took it, each sealed with its own sequence number: the peer's strict sequence check is the judge.
@Suite(.timeLimit(.minutes(1)))
struct ParallelSealingTests {
    private static let secret = (0..<32).map { UInt8($0) }

    /// A chunk frame of `size` bytes whose first bytes say which payload and chunk it is.
    private static func chunk(payload: Int64, index: Int, size: Int) -> ProtoOfflineFrame {
        let header = OfflineFrames.payloadHeader(
            id: payload, type: .file, totalSize: -1, fileName: "f", parentFolder: nil, lastModifiedMillis: nil)
        var body = Data(repeating: UInt8(truncatingIfNeeded: index), count: size)
        body[0] = UInt8(payload)
        return OfflineFrames.payloadData(
            header: header, offset: Int64(index * size), body: body, index: Int32(index), isLast: false)
    }

    @Test(
        "Chunks sealed on several tasks, mixed with small frames from other producers, arrive in order and each opens with the next sequence number",
        arguments: [1, 2, 4])
    func orderAndSequenceNumbers(width: Int) async throws {
        let (ours, theirs) = InMemoryChannel.pair()
        let secure = SecureContextBox(channel: D2DSecureChannel(nextProtocolSecret: Self.secret, role: .client))
        let writer = OutboundFrameWriter(channel: ours, secure: secure, sealingWidth: width)
        let writing = Task { await writer.run() }
        let chunks = 60
        // Two payloads (large frames, enqueued: each producer waits until its frame is taken) and a stream of
        // small control frames that never wait.
        let producers = Task {
            await withTaskGroup(of: Void.self) { group in
                for payload in [Int64(1), 2] {
                    group.addTask {
                        for index in 0..<chunks {
                            await writer.enqueue(.sealed(Self.chunk(payload: payload, index: index, size: 20_000 + index)))
                        }
                    }
                }
                group.addTask {
                    for sequence in 0..<chunks {
                        writer.post(.sealed(OfflineFrames.keepAlive(ack: false, sequenceNumber: UInt32(sequence))))
                        await Task.yield()
                    }
                }
            }
        }
        var opener = D2DSecureChannel(nextProtocolSecret: Self.secret, role: .server)
        var nextChunk: [Int64: Int] = [1: 0, 2: 0]
        var nextKeepAlive: UInt32 = 0
        for _ in 0..<(3 * chunks) {
            let sealed = try #require(try await theirs.readFrame())
            // decode throws unless this message carries exactly the next sequence number.
            let frame = try OfflineFrameParser.parse(try opener.decode(sealed))
            switch frame {
            case .payloadTransfer(let transfer):
                let payload = transfer.payloadHeader.id
                let index = try #require(nextChunk[payload])
                #expect(transfer.payloadChunk.offset == Int64(index * (20_000 + index)))
                #expect(transfer.payloadChunk.body.count == 20_000 + index)
                #expect(transfer.payloadChunk.body.first == UInt8(payload))
                nextChunk[payload] = index + 1
            case .keepAlive(let keepAlive):
                #expect(keepAlive.seqNum == nextKeepAlive)
                nextKeepAlive += 1
            default:
                Issue.record("unexpected frame \(frame.frameType)")
            }
        }
        #expect(opener.lastReceivedSequenceNumber == Int32(3 * chunks))
        #expect(nextChunk == [1: chunks, 2: chunks])
        await producers.value
        writer.finishAfterQueued()
        #expect(await writing.value == nil)
    }

    @Test("A write that fails while later chunks are being sealed drops them, releases every producer and ends the writer once")
    func failureWhileSealing() async throws {
        let channel = FailingChannel(failAt: 5)
        let secure = SecureContextBox(channel: D2DSecureChannel(nextProtocolSecret: Self.secret, role: .client))
        let writer = OutboundFrameWriter(channel: channel, secure: secure, sealingWidth: 4)
        let reports = LockedValue(0)
        writer.onFailure { _ in reports.withLock { $0 += 1 } }
        let writing = Task { await writer.run() }
        for index in 0..<40 {
            await writer.enqueue(.sealed(Self.chunk(payload: 1, index: index, size: 32_768)))
        }
        writer.finishAfterQueued()
        let failure = await writing.value
        #expect(failure != nil)
        #expect(writer.failure != nil)
        #expect(reports.withLock { $0 } == 1)
        #expect(channel.writes == 5)
    }
}

/// A channel whose `failAt`-th write fails (and every later one).
private final class FailingChannel: EndpointChannel {
    let medium = MediumKind.wifiLAN
    let peerDescription = "failing"
    private let failAt: Int
    private let count = LockedValue(0)

    init(failAt: Int) { self.failAt = failAt }

    var writes: Int { count.withLock { $0 } }

    func readFrame() async throws -> [UInt8]? { nil }

    func writeFrame(_ body: [UInt8]) async throws {
        let number = count.withLock { count -> Int in
            count += 1
            return count
        }
        if number >= failAt { throw NearbyError(.endpointIoError, "write \(number) fails") }
    }

    func close() async {}
}
