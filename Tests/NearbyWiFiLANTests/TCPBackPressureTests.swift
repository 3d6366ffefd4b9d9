import NearbyTestSupport
import Foundation
import NearbyWiFiLAN
import NearbyWire
import Testing

/// Writing much more than the socket buffers hold to a peer that reads slowly.
@Suite("TCP back-pressure", .timeLimit(.minutes(5)))
struct TCPBackPressureTests {
    @Test("200 frames of 1 MiB to a slow reader all arrive intact and in order")
    func slowReaderReceivesEverything() async throws {
        let (client, server) = try await makeTCPPair()
        let frameCount = 200
        let frameSize = LengthPrefixFraming.maxFrameLength
        try await withTestTimeout(300, "200 MiB through a slow reader") {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // A few distinct frames, reused, so that building them costs little.
                    let frames = (0..<4).map { tcpTestFrame(index: $0, count: frameSize) }
                    for index in 0..<frameCount {
                        try await client.writeFrame(frames[index % frames.count])
                    }
                }
                group.addTask {
                    for index in 0..<frameCount {
                        if index % 20 == 0 {
                            try await Task.sleep(for: .milliseconds(20))
                        }
                        guard let body = try await server.readFrame() else {
                            Issue.record("stream ended after \(index) frames")
                            return
                        }
                        if !isTCPTestFrame(body, index: index % 4, count: frameSize) {
                            Issue.record("frame \(index) arrived damaged or out of order")
                            return
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        await client.close()
        await server.close()
    }
}
