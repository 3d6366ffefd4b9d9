import NearbyCore
import NearbyWire

/// An `EndpointChannel` over one L2CAP LE credit-based channel, of either radio backend (``L2CAPSDUChannel``).
///
/// The channel is a byte stream carrying the same 4-byte length-prefixed frames as TCP: each frame is written as
/// SDUs of at most the peer's MTU, and inbound SDUs are treated as stream pieces (peers may coalesce or split
/// writes into SDUs as they like). Writes are serialised so that each frame goes out whole; one read at a time.
package actor BLEEndpointChannel: EndpointChannel {
    /// Always `MediumKind.ble`.
    package nonisolated let medium: MediumKind = .ble
    /// The peer's address and the channel IDs.
    package nonisolated let peerDescription: String
    /// The underlying L2CAP channel.
    package nonisolated let channel: any L2CAPSDUChannel

    private var reader = IncrementalFrameReader()
    private var reading = false
    private var closed = false
    private var writeGate = AsyncGate()

    /// Wraps an open L2CAP channel.
    package init(channel: any L2CAPSDUChannel) {
        self.channel = channel
        self.peerDescription = channel.channelDescription
    }

    /// Reads the next frame body; `nil` when the peer closed the channel between frames or after ``close()``.
    /// - Throws: `.invalidFraming` for a bad length prefix or a channel closed inside a frame, `.endpointIoError`
    ///   (or the host's error) when the LE connection failed.
    package func readFrame() async throws -> [UInt8]? {
        guard !reading else { throw NearbyError(.outOfOrderApiCall, "readFrame() while another read is pending") }
        reading = true
        defer { reading = false }
        while true {
            if closed { return nil }
            if let body = try reader.nextFrame() { return body }
            guard let sdu = try await channel.receive() else {
                if reader.isAtFrameBoundary || closed { return nil }
                throw NearbyError(.invalidFraming, "the L2CAP channel to \(peerDescription) closed inside a frame")
            }
            reader.append(sdu)
        }
    }

    /// Writes one frame body with its length prefix. Suspends while the peer grants no credits.
    package func writeFrame(_ body: [UInt8]) async throws {
        let framed = try LengthPrefixFraming.frame(body)
        if !writeGate.tryEnter() {
            await withCheckedContinuation { writeGate.enqueue($0) }
        }
        defer { writeGate.leave() }
        guard !closed else { throw NearbyError(.endpointIoError, "the channel to \(peerDescription) is closed") }
        let size = max(1, channel.peerMTU)
        var offset = 0
        while offset < framed.count {
            let end = min(framed.count, offset + size)
            try await channel.send(Array(framed[offset..<end]))
            offset = end
        }
    }

    /// Closes the L2CAP channel (and, on the central side, the LE connection once unused). Idempotent.
    package func close() async {
        guard !closed else { return }
        closed = true
        await channel.close()
    }
}
