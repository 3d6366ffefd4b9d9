import NearbyTestSupport
import NIOCore
import NIOEmbedded
import NearbyWire
import Testing

struct LengthPrefixFramingTests {
    @Test("A frame is its big-endian length followed by the body", .timeLimit(.minutes(5)))
    func framesBody() throws {
        #expect(try LengthPrefixFraming.frame([0xAA, 0xBB]) == [0, 0, 0, 2, 0xAA, 0xBB])
        #expect(try LengthPrefixFraming.frame([UInt8]()) == [0, 0, 0, 0])
        let big = [UInt8](repeating: 1, count: 70_000)
        #expect(Array(try LengthPrefixFraming.frame(big).prefix(4)) == [0, 1, 0x11, 0x70])
    }

    @Test("Lengths below zero or above 1 MiB are errors", .timeLimit(.minutes(5)), arguments: [
        [UInt8]([0x80, 0, 0, 0]), [0xFF, 0xFF, 0xFF, 0xFF], [0x7F, 0xFF, 0xFF, 0xFF], [0, 0x10, 0, 1],
    ])
    func rejectsBadLengths(prefix: [UInt8]) {
        let error = #expect(throws: NearbyError.self) { try LengthPrefixFraming.decodeLength(prefix) }
        #expect(error?.code == .invalidFraming)
    }

    @Test("Exactly 1 MiB is accepted; one more byte is refused when writing", .timeLimit(.minutes(5)))
    func maximum() throws {
        #expect(try LengthPrefixFraming.decodeLength([0, 0x10, 0, 0]) == 1_048_576)
        #expect(throws: NearbyError.self) {
            try LengthPrefixFraming.frame([UInt8](repeating: 0, count: 1_048_577))
        }
    }

    @Test("The incremental reader reassembles frames fed one byte at a time", .timeLimit(.minutes(5)))
    func incrementalByteAtATime() throws {
        let bodies: [[UInt8]] = [[1, 2, 3], [], Array(repeating: 7, count: 1000), [9]]
        let stream = try bodies.flatMap { try LengthPrefixFraming.frame($0) }
        var reader = IncrementalFrameReader()
        var received: [[UInt8]] = []
        for byte in stream {
            reader.append([byte])
            while let body = try reader.nextFrame() { received.append(body) }
        }
        #expect(received == bodies)
        #expect(reader.isAtFrameBoundary)
    }

    @Test("The incremental reader reports a 2 GiB prefix as soon as it arrives", .timeLimit(.minutes(5)))
    func incrementalHostilePrefix() {
        var reader = IncrementalFrameReader()
        reader.append([0x7F, 0xFF, 0xFF, 0xFF, 1, 2, 3])
        #expect(throws: NearbyError.self) { try reader.nextFrame() }
    }

    @Test("The pure splitter takes one frame off the front", .timeLimit(.minutes(5)))
    func split() throws {
        let bytes = try LengthPrefixFraming.frame([1, 2]) + [0, 0]
        let result = try #require(try LengthPrefixFraming.split(bytes))
        #expect(result.body == [1, 2])
        #expect(result.consumed == 6)
        #expect(try LengthPrefixFraming.split([0, 0, 0, 5, 1]) == nil)
    }

    @Test("The NIO frame reader emits one body per frame, across arbitrary read boundaries", .timeLimit(.minutes(5)))
    func nioDecoder() throws {
        let channel = EmbeddedChannel(handler: LengthPrefixedFrameReader())
        let bodies: [[UInt8]] = [[1], Array(repeating: 2, count: 300), [], [3, 3, 3]]
        let stream = try bodies.flatMap { try LengthPrefixFraming.frame($0) }
        var offset = 0
        for size in [1, 2, 5, 100, 400, 1000] where offset < stream.count {
            let end = min(stream.count, offset + size)
            try channel.writeInbound(ByteBuffer(bytes: stream[offset..<end]))
            offset = end
        }
        var received: [[UInt8]] = []
        while let body: [UInt8] = try channel.readInbound() {
            received.append(body)
        }
        #expect(received == bodies)
        #expect(try channel.finish().isClean)
    }

    @Test("The NIO frame reader gives the same bodies for every way of cutting a stream in two or three reads", .timeLimit(.minutes(5)))
    func nioReaderEverySplit() throws {
        let bodies: [[UInt8]] = [[7, 7], [], Array(0..<40).map { UInt8($0) }, [9]]
        let stream = try bodies.flatMap { try LengthPrefixFraming.frame($0) }
        for first in 0...stream.count {
            for second in stride(from: first, through: stream.count, by: 3) {
                let channel = EmbeddedChannel(handler: LengthPrefixedFrameReader())
                for range in [0..<first, first..<second, second..<stream.count] where !range.isEmpty {
                    try channel.writeInbound(ByteBuffer(bytes: stream[range]))
                }
                var received: [[UInt8]] = []
                while let body: [UInt8] = try channel.readInbound() {
                    received.append(body)
                }
                #expect(received == bodies, "cut at \(first) and \(second)")
                #expect(try channel.finish().isClean)
            }
        }
    }

    @Test("A stream that ends inside a length prefix is reported, and bytes after a framing error are dropped", .timeLimit(.minutes(5)))
    func nioReaderTruncatedPrefixAndAfterError() throws {
        let truncated = EmbeddedChannel(handler: LengthPrefixedFrameReader())
        try truncated.writeInbound(ByteBuffer(bytes: [0, 0, 0, 1, 5, 0, 0]))
        #expect(try truncated.readInbound(as: [UInt8].self) == [5])
        #expect(throws: NearbyError.self) { try truncated.finish() }

        let hostile = EmbeddedChannel(handler: LengthPrefixedFrameReader())
        #expect(throws: NearbyError.self) {
            try hostile.writeInbound(ByteBuffer(bytes: [0xFF, 0xFF, 0xFF, 0xFF]))
        }
        try hostile.writeInbound(ByteBuffer(bytes: [0, 0, 0, 1, 5]))
        #expect(try hostile.readInbound(as: [UInt8].self) == nil)
        #expect(try hostile.finish().isClean)
    }

    @Test("The NIO frame reader rejects a 2 GiB length prefix without buffering it", .timeLimit(.minutes(5)))
    func nioHostileLength() throws {
        let channel = EmbeddedChannel(handler: LengthPrefixedFrameReader())
        #expect(throws: NearbyError.self) {
            try channel.writeInbound(ByteBuffer(bytes: [0x80, 0, 0, 0]))
        }
        _ = try? channel.finish()
    }

    @Test("The NIO frame reader reports a stream that ends inside a frame", .timeLimit(.minutes(5)))
    func nioTruncated() throws {
        let channel = EmbeddedChannel(handler: LengthPrefixedFrameReader())
        try channel.writeInbound(ByteBuffer(bytes: [0, 0, 0, 10, 1, 2, 3]))
        #expect(throws: NearbyError.self) { try channel.finish() }
    }

    @Test("The NIO encoder writes the prefix and refuses oversize bodies", .timeLimit(.minutes(5)))
    func nioEncoder() throws {
        let channel = EmbeddedChannel(handler: MessageToByteHandler(LengthPrefixedFrameEncoder()))
        try channel.writeOutbound(ByteBuffer(bytes: [5, 6, 7]))
        let written: ByteBuffer = try #require(try channel.readOutbound())
        #expect(Array(written.readableBytesView) == [0, 0, 0, 3, 5, 6, 7])
        #expect(throws: NearbyError.self) {
            try channel.writeOutbound(ByteBuffer(repeating: 0, count: 1_048_577))
        }
        _ = try? channel.finish()
    }

    @Test("The NIO frame writer sends the prefix then the body itself, and refuses oversize bodies", .timeLimit(.minutes(5)))
    func nioFrameWriter() throws {
        let channel = EmbeddedChannel(handler: LengthPrefixedFrameWriter())
        try channel.writeOutbound(ByteBuffer(bytes: [5, 6, 7]))
        let prefix: ByteBuffer = try #require(try channel.readOutbound())
        let body: ByteBuffer = try #require(try channel.readOutbound())
        #expect(Array(prefix.readableBytesView) + Array(body.readableBytesView) == [0, 0, 0, 3, 5, 6, 7])
        #expect(throws: NearbyError.self) {
            try channel.writeOutbound(ByteBuffer(repeating: 0, count: 1_048_577))
        }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
        _ = try? channel.finish()
    }

    @Test("Random byte streams never crash the decoders", .timeLimit(.minutes(5)))
    func randomStreams() throws {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<2_000 {
            let bytes = generator.bytes(Int(generator.next() % 64))
            var reader = IncrementalFrameReader()
            reader.append(bytes)
            do {
                while try reader.nextFrame() != nil {}
            } catch {
                #expect(error.code == .invalidFraming)
            }
            let channel = EmbeddedChannel(handler: LengthPrefixedFrameReader())
            do {
                try channel.writeInbound(ByteBuffer(bytes: bytes))
                _ = try channel.finish()
            } catch let error as NearbyError {
                #expect(error.code == .invalidFraming)
            }
        }
    }
}
