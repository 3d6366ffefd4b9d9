import NearbyTestSupport
import Foundation
import NearbyCore
@testable import NearbyWiFiLAN
import NearbyWire
import Testing

/// Framed TCP channels on 127.0.0.1: frames in both directions, framing errors, end of stream and closing.
@Suite("TCPEndpointChannel", .timeLimit(.minutes(5)))
struct TCPEndpointChannelTests {
    @Test("a 1 MiB frame and small frames cross in both directions")
    func roundTripBothWays() async throws {
        let (client, server) = try await makeTCPPair()
        #expect(client.medium == .wifiLAN)
        #expect(client.peerDescription.hasPrefix("127.0.0.1:"))
        #expect(server.peerDescription.hasPrefix("127.0.0.1:"))

        try await withTestTimeout(60, "frames in both directions") {
            let big = tcpTestFrame(index: 7, count: LengthPrefixFraming.maxFrameLength)
            try await client.writeFrame(big)
            let atServer = try await server.readFrame()
            #expect(atServer.map { isTCPTestFrame($0, index: 7, count: big.count) } == true)
            try await server.writeFrame(big)
            let atClient = try await client.readFrame()
            #expect(atClient.map { isTCPTestFrame($0, index: 7, count: big.count) } == true)

            try await client.writeFrame([])
            #expect(try await server.readFrame() == [])
        }
        await client.close()
        await server.close()
    }

    @Test("1,000 small frames arrive in order while the other side writes at the same time")
    func thousandFramesInOrder() async throws {
        let (client, server) = try await makeTCPPair()
        let count = 1_000
        try await withTestTimeout(60, "1,000 frames each way") {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (writer, reader) in [(client, server), (server, client)] {
                    group.addTask {
                        for index in 0..<count {
                            try await writer.writeFrame(tcpTestFrame(index: index, count: index % 97))
                        }
                    }
                    group.addTask {
                        for index in 0..<count {
                            let body = try await reader.readFrame()
                            guard let body, isTCPTestFrame(body, index: index, count: index % 97) else {
                                Issue.record("frame \(index) is wrong: \(String(describing: body?.prefix(8)))")
                                return
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        await client.close()
        await server.close()
    }

    @Test("a frame body over 1 MiB is refused before anything is sent")
    func oversizedWriteRefused() async throws {
        let (client, server) = try await makeTCPPair()
        let error = await tcpCaughtError {
            try await client.writeFrame([UInt8](repeating: 1, count: LengthPrefixFraming.maxFrameLength + 1))
        }
        #expect((error as? NearbyError)?.code == .invalidFraming)
        // The channel is still usable.
        try await client.writeFrame([1, 2, 3])
        #expect(try await withTestTimeout(10, "a frame") { try await server.readFrame() } == [1, 2, 3])
        await client.close()
        await server.close()
    }

    @Test("a peer announcing a 2 GiB frame makes readFrame throw invalidFraming", arguments: [
        [0x80, 0x00, 0x00, 0x00] as [UInt8],  // 2 GiB: negative as a signed 32-bit length
        [0x7F, 0xFF, 0xFF, 0xFF] as [UInt8],  // 2 GiB - 1: far above the 1 MiB limit
        [0x00, 0x10, 0x00, 0x01] as [UInt8],  // 1 MiB + 1
    ])
    func hugeLengthPrefix(prefix: [UInt8]) async throws {
        let accepted = TCPAcceptedChannels()
        let listener = try await TCPListener.bind(host: "127.0.0.1", onAccept: accepted.onAccept)
        defer { Task { await listener.stop() } }
        let peer = try RawTCPClient(port: listener.port)
        defer { peer.close() }
        let channel = try await accepted.next()
        // One good frame first: it is delivered before the bad prefix is reported.
        try peer.send([0, 0, 0, 2, 0xAB, 0xCD] + prefix + [1, 2, 3])
        let result = try await withTestTimeout(10, "the framing error") { () -> Result<[UInt8]?, NearbyError> in
            #expect(try await channel.readFrame() == [0xAB, 0xCD])
            do {
                return .success(try await channel.readFrame())
            } catch let error as NearbyError {
                return .failure(error)
            }
        }
        switch result {
        case .failure(let error):
            #expect(error.code == .invalidFraming)
        case .success(let body):
            Issue.record("expected invalidFraming, read \(String(describing: body))")
        }
        // The channel is closed after the error: later reads end, writes fail.
        #expect(try await channel.readFrame() == nil)
        let writeError = await tcpCaughtError { try await channel.writeFrame([1]) }
        #expect((writeError as? NearbyError)?.code == .endpointIoError)
        await channel.close()
    }

    @Test("a peer that closes inside a frame makes readFrame throw invalidFraming")
    func closeMidFrame() async throws {
        let accepted = TCPAcceptedChannels()
        let listener = try await TCPListener.bind(host: "127.0.0.1", onAccept: accepted.onAccept)
        defer { Task { await listener.stop() } }
        let peer = try RawTCPClient(port: listener.port)
        let channel = try await accepted.next()
        try peer.send([0, 0, 0, 10, 1, 2, 3])
        peer.close()
        let error = await tcpCaughtError {
            _ = try await withTestTimeout(10, "the truncated frame") { try await channel.readFrame() }
        }
        #expect((error as? NearbyError)?.code == .invalidFraming, "got \(String(describing: error))")
        await channel.close()
    }

    @Test("a peer that closes between frames gives every frame, then nil")
    func cleanCloseBetweenFrames() async throws {
        let accepted = TCPAcceptedChannels()
        let listener = try await TCPListener.bind(host: "127.0.0.1", onAccept: accepted.onAccept)
        defer { Task { await listener.stop() } }
        let peer = try RawTCPClient(port: listener.port)
        let channel = try await accepted.next()
        try peer.send([0, 0, 0, 1, 42, 0, 0, 0, 0])
        peer.close()
        try await withTestTimeout(10, "two frames and the end of the stream") { () async throws in
            #expect(try await channel.readFrame() == [42])
            #expect(try await channel.readFrame() == [])
            #expect(try await channel.readFrame() == nil)
            #expect(try await channel.readFrame() == nil)
        }
        await channel.close()
    }

    @Test("frames written just before close() still reach the peer")
    func closeFlushesQueuedFrames() async throws {
        let (client, server) = try await makeTCPPair()
        let count = 50
        try await withTestTimeout(60, "frames then the end of the stream") {
            for index in 0..<count {
                try await client.writeFrame(tcpTestFrame(index: index, count: 64 * 1024))
            }
            await client.close()
            for index in 0..<count {
                let body = try await server.readFrame()
                #expect(body.map { isTCPTestFrame($0, index: index, count: 64 * 1024) } == true, "frame \(index)")
            }
            #expect(try await server.readFrame() == nil)
        }
        await server.close()
    }

    @Test("close() returns and fails a blocked write when the peer never reads")
    func closeWhilePeerDoesNotRead() async throws {
        let (client, server) = try await makeTCPPair()
        let frame = [UInt8](repeating: 0x5A, count: LengthPrefixFraming.maxFrameLength)
        // 1 GiB is far more than the socket buffers and the server's inbound buffer hold: the writer blocks.
        let writer = Task {
            for _ in 0..<1_024 {
                try await client.writeFrame(frame)
            }
        }
        try await Task.sleep(for: .milliseconds(200))
        try await withTestTimeout(30, "close() with a stalled peer") {
            await client.close()
        }
        let outcome = try await withTestTimeout(30, "the blocked write to end") { await writer.result }
        switch outcome {
        case .success:
            Issue.record("1 GiB cannot have been written to a peer that never reads")
        case .failure(let error):
            #expect((error as? NearbyError)?.code == .endpointIoError, "got \(error)")
        }
        await server.close()
    }

    @Test("close() ends a pending read in another task; later writes fail; close is idempotent")
    func closeDuringPendingRead() async throws {
        let (client, server) = try await makeTCPPair()
        let pendingRead = Task { try await server.readFrame() }
        _ = try await eventually("the read to be pending") { server.isReadPending ? true : nil }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await server.close() }
            group.addTask { await server.close() }
        }
        let outcome = try await withTestTimeout(10, "the pending read to end") {
            await pendingRead.result
        }
        switch outcome {
        case .success(let body):
            #expect(body == nil)
        case .failure(let error):
            #expect(error is NearbyError, "a pending read ends with nil or a NearbyError, got \(error)")
        }
        #expect(try await server.readFrame() == nil)
        let writeError = await tcpCaughtError { try await server.writeFrame([1]) }
        #expect((writeError as? NearbyError)?.code == .endpointIoError)
        // The peer sees the end of the stream.
        #expect(try await withTestTimeout(10, "end of stream at the peer") { try await client.readFrame() } == nil)
        await client.close()
        await server.close()
    }

    @Test("a second concurrent read is refused")
    func concurrentReadRefused() async throws {
        let (client, server) = try await makeTCPPair()
        let firstRead = Task { try await server.readFrame() }
        _ = try await eventually("the first read to be pending") { server.isReadPending ? true : nil }
        let error = await tcpCaughtError { _ = try await server.readFrame() }
        #expect((error as? NearbyError)?.code == .outOfOrderApiCall)
        try await client.writeFrame([9])
        #expect(try await withTestTimeout(10, "the first read") { try await firstRead.value } == [9])
        await client.close()
        await server.close()
    }

    @Test("a channel dropped without close() does not trap and releases its socket")
    func droppedWithoutClose() async throws {
        var pair: (client: TCPEndpointChannel, server: TCPEndpointChannel)? = try await makeTCPPair()
        let client = pair!.client
        pair = nil
        #expect(try await withTestTimeout(10, "end of stream after the peer was dropped") {
            try await client.readFrame()
        } == nil)
        await client.close()
    }
}
