import NearbyWire

/// A message-oriented BLE data path under the socket layer: an L2CAP channel with Android's length framing
/// (``L2CAPMessageLink``) or a Weave GATT socket (``WeaveMessageLink``).
package protocol BLEMessageLink: Sendable {
    /// Which data path this is.
    var path: BleSocketMachine.Path { get }
    /// The peer, for logs.
    var peerDescription: String { get }
    /// Sends one message; suspends while the path applies back-pressure.
    func sendMessage(_ message: [UInt8]) async throws
    /// The next message; `nil` once the path closed cleanly.
    func receiveMessage() async throws -> [UInt8]?
    /// Closes the path. Idempotent.
    func close() async
}

/// Messages over one L2CAP LE credit-based channel, each as `[u32 BE length][message]` (``BleL2CAPFraming``), written
/// as SDUs of at most the peer's MTU and read as a byte stream, whatever SDU boundaries the peer chose.
package actor L2CAPMessageLink: BLEMessageLink {
    /// Always ``BleSocketMachine/Path/l2cap``.
    package nonisolated let path: BleSocketMachine.Path = .l2cap
    /// The peer and the channel.
    package nonisolated let peerDescription: String
    /// The channel.
    package nonisolated let channel: any L2CAPSDUChannel
    private var framing = BleL2CAPFraming()
    private var writeGate = AsyncGate()
    private var reading = false

    /// Wraps an open channel.
    package init(channel: any L2CAPSDUChannel) {
        self.channel = channel
        self.peerDescription = channel.channelDescription
    }

    /// Sends one framed message, whole, before any other message.
    package func sendMessage(_ message: [UInt8]) async throws {
        let framed = BleL2CAPFraming.frame(message)
        if !writeGate.tryEnter() {
            await withCheckedContinuation { writeGate.enqueue($0) }
        }
        defer { writeGate.leave() }
        let size = max(1, channel.peerMTU)
        var offset = 0
        while offset < framed.count {
            let end = min(framed.count, offset + size)
            try await channel.send(Array(framed[offset..<end]))
            offset = end
        }
    }

    /// The next message.
    /// - Throws: `.malformedBLESocketPacket` for a bad length, `.invalidFraming` when the channel closes inside a
    ///   message.
    package func receiveMessage() async throws -> [UInt8]? {
        guard !reading else { throw NearbyError(.outOfOrderApiCall, "two concurrent reads on one BLE link") }
        reading = true
        defer { reading = false }
        while true {
            if let packet = try framing.nextPacket() { return packet }
            guard let sdu = try await channel.receive() else {
                if framing.isAtPacketBoundary { return nil }
                throw NearbyError(.invalidFraming, "the L2CAP channel to \(peerDescription) closed inside a packet")
            }
            framing.append(sdu)
        }
    }

    /// Closes the channel.
    package func close() async {
        await channel.close()
    }
}
