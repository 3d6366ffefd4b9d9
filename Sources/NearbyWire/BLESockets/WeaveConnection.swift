/// The Weave protocol of one GATT socket as a value-type state machine: the connection handshake, the packet
/// counters of both directions, fragmentation of messages into packets of the negotiated size and their
/// reassembly. It does no I/O: the caller writes the packets it returns (a client to the server's write
/// characteristic, a server as indications) and feeds in every packet it receives.
///
/// The client's first packet is a connection request (counter 0) with Weave version 1…1 and its largest packet
/// size (0 when it does not know it); the server answers with a connection confirm (counter 0) giving version 1 and
/// the packet size: the request's size, or its own largest when the request said 0, never more than its own. Every
/// later packet of a direction carries the next counter (mod 8) after its first; a wrong counter, a data packet out
/// of place or anything unparseable makes this side send an error packet and close. Sources: the Apple
/// `GNSCentralPeerManager.m`, `GNSPeripheralServiceManager.m`, `GNSSocket.m` and `GNSWeavePacket.m`.
package struct WeaveConnection: Sendable {
    /// Which end of the GATT socket this is.
    package enum Role: Sendable, Hashable {
        /// The GATT client (the connecting side, central): sends the connection request.
        case client
        /// The GATT server (the advertising side, peripheral): answers it.
        case server
    }

    /// What the caller does.
    package enum Action: Sendable {
        /// Send this packet (a write to the server, an indication to the client).
        case send([UInt8])
        /// The handshake finished: messages may flow, in packets of this size.
        case connected(packetSize: Int)
        /// A whole message arrived.
        case deliver([UInt8])
        /// The connection ended: by the peer's error packet or by a protocol error here (after the error packet
        /// this side sends).
        case closed(NearbyError)
    }

    private enum State: Sendable, Hashable {
        case idle
        case awaitingConfirm
        case awaitingRequest
        case connected
        case closed
    }

    /// This side's role.
    package let role: Role
    /// The largest packet this side can send or take (the ATT MTU minus 3).
    package let maxPacketSize: Int
    /// The largest message this side reassembles.
    package let maxMessageSize: Int
    /// The negotiated packet size (``WeavePacket/minPacketSize`` until connected).
    package private(set) var packetSize = WeavePacket.minPacketSize
    private var state: State
    private var sendCounter: UInt8 = 0
    private var receiveCounter: UInt8 = 0
    private var incoming: [UInt8]?

    /// A connection for `role` whose packets may be up to `maxPacketSize` bytes (clamped to 20…509: one packet is
    /// one attribute value, and the Apple implementation caps it at 509, the largest ATT MTU's 512 minus 3).
    package init(role: Role, maxPacketSize: Int, maxMessageSize: Int = 4 * 1024 * 1024) {
        self.role = role
        self.maxPacketSize = min(WeavePacket.maxPacketSize, max(WeavePacket.minPacketSize, maxPacketSize))
        self.maxMessageSize = maxMessageSize
        self.state = role == .client ? .idle : .awaitingRequest
    }

    /// Whether messages may be sent.
    package var isConnected: Bool { state == .connected }
    /// Whether the connection ended.
    package var isClosed: Bool { state == .closed }

    /// The client's connection request (`advertisedPacketSize` 0 says "choose for me", as iOS does).
    package mutating func start(advertisedPacketSize: UInt16? = nil) -> [Action] {
        guard role == .client, state == .idle else { return [] }
        state = .awaitingConfirm
        let size = advertisedPacketSize ?? UInt16(clamping: maxPacketSize)
        return [.send(nextPacket(.connectionRequest(
            minVersion: WeavePacket.version, maxVersion: WeavePacket.version, maxPacketSize: size, data: [])))]
    }

    /// Feeds one received packet.
    package mutating func receive(_ bytes: [UInt8]) -> [Action] {
        guard state != .closed, state != .idle else { return [] }
        let packet: WeavePacket
        do {
            packet = try WeavePacket(decoding: bytes)
        } catch {
            return fail(error)
        }
        guard packet.counter == receiveCounter else {
            return fail(protocolError("packet counter \(packet.counter), expected \(receiveCounter)"))
        }
        receiveCounter = (receiveCounter + 1) % WeavePacket.counterModulus
        switch (packet.kind, state) {
        case (.error, _):
            state = .closed
            return [.closed(NearbyError(.endpointIoError, "the peer closed the Weave connection"))]
        case (.connectionRequest(let minVersion, let maxVersion, let requested, _), .awaitingRequest):
            guard minVersion <= WeavePacket.version, maxVersion >= WeavePacket.version else {
                return fail(protocolError("the peer speaks Weave versions \(minVersion)…\(maxVersion), not 1"))
            }
            let size = requested == 0 ? maxPacketSize : min(Int(requested), maxPacketSize)
            guard size >= WeavePacket.minPacketSize else {
                return fail(protocolError("packet size \(size) is below \(WeavePacket.minPacketSize)"))
            }
            packetSize = size
            state = .connected
            let confirm = nextPacket(.connectionConfirm(version: WeavePacket.version, packetSize: UInt16(size), data: []))
            return [.send(confirm), .connected(packetSize: size)]
        case (.connectionConfirm(let version, let size, _), .awaitingConfirm):
            guard version == WeavePacket.version else {
                return fail(protocolError("the peer confirmed Weave version \(version)"))
            }
            guard Int(size) >= WeavePacket.minPacketSize else {
                return fail(protocolError("packet size \(size) is below \(WeavePacket.minPacketSize)"))
            }
            packetSize = min(Int(size), maxPacketSize)
            state = .connected
            return [.connected(packetSize: packetSize)]
        case (.data(let first, let last, let payload), .connected):
            if first {
                guard incoming == nil else { return fail(protocolError("a new message began inside another")) }
                incoming = []
            } else if incoming == nil {
                return fail(protocolError("a message continued that never began"))
            }
            guard incoming!.count + payload.count <= maxMessageSize else {
                return fail(protocolError("a message exceeds \(maxMessageSize) bytes"))
            }
            incoming!.append(contentsOf: payload)
            guard last else { return [] }
            let message = incoming!
            incoming = nil
            return [.deliver(message)]
        default:
            return fail(protocolError("unexpected \(Self.name(packet.kind)) packet"))
        }
    }

    /// The packets carrying `message`, numbered in order; empty when not connected.
    package mutating func packets(for message: [UInt8]) -> [[UInt8]] {
        guard state == .connected else { return [] }
        let chunk = packetSize - 1
        var packets: [[UInt8]] = []
        var offset = 0
        repeat {
            let end = min(message.count, offset + chunk)
            packets.append(nextPacket(.data(isFirst: offset == 0, isLast: end == message.count, payload: Array(message[offset..<end]))))
            offset = end
        } while offset < message.count
        return packets
    }

    /// Closes from this side: the error packet Weave uses to end a connection (none before the handshake began or
    /// after it ended).
    package mutating func close() -> [Action] {
        guard state != .closed else { return [] }
        let wasIdle = state == .idle
        state = .closed
        return wasIdle ? [] : [.send(nextPacket(.error))]
    }

    private mutating func nextPacket(_ kind: WeavePacket.Kind) -> [UInt8] {
        let packet = WeavePacket(counter: sendCounter, kind)
        sendCounter = (sendCounter + 1) % WeavePacket.counterModulus
        return packet.encodedBytes
    }

    private mutating func fail(_ error: NearbyError) -> [Action] {
        let errorPacket = nextPacket(.error)
        state = .closed
        incoming = nil
        return [.send(errorPacket), .closed(error)]
    }

    private func protocolError(_ message: String) -> NearbyError {
        NearbyError(.malformedBLESocketPacket, "Weave: \(message)")
    }

    private static func name(_ kind: WeavePacket.Kind) -> String {
        switch kind {
        case .connectionRequest: "connection request"
        case .connectionConfirm: "connection confirm"
        case .error: "error"
        case .data: "data"
        }
    }
}
