/// The BLE socket layer of one Nearby BLE connection as a value-type state machine, for either data path.
///
/// It works on whole *messages* — one Weave message on the GATT path, one length-prefixed packet
/// (``BleL2CAPFraming``) on the L2CAP path — and returns what to do; it does no I/O and reads no clock.
///
/// * **Client** (the connecting side). On L2CAP it first sends ``BleL2CAPCommand/Code/requestDataConnection``
///   and waits for ``BleL2CAPCommand/Code/responseDataConnectionReady``; then (at once on GATT) it sends the
///   introduction with the service's hash and is established.
/// * **Server** (the advertising side). On L2CAP it answers a data-connection request with "ready" and an
///   advertisement request with an empty advertisement, as the Apple implementation does; then it waits for the
///   introduction and accepts it when the hash is one of its services'.
/// * **Established.** Each data packet with the service's hash gives its bytes (a piece of the Nearby
///   `[u32 length][frame]` stream); on L2CAP the receiver answers each with an acknowledgement of the packet's size
///   (hash included, as the Apple `GNCBLEL2CAPConnection` does; the C++ core sends the frame length — nobody checks
///   it). A disconnection ends the socket cleanly; acknowledgements and repeated introductions are ignored.
///
/// A packet that does not parse, a data packet with another hash, or a data packet before the introduction is
/// a protocol error: the caller drops the connection.
package struct BleSocketMachine: Sendable {
    /// The data path under the socket layer.
    package enum Path: Sendable, Hashable {
        /// A Weave GATT socket.
        case gatt
        /// An L2CAP LE credit-based channel with Android's length framing and command handshake.
        case l2cap
    }

    /// What the caller does.
    package enum Action: Sendable {
        /// Send this message.
        case send([UInt8])
        /// The socket is established for the service with this hash.
        case established(serviceIDHash: [UInt8])
        /// Stream bytes arrived.
        case deliver([UInt8])
        /// The peer disconnected the socket.
        case disconnected
        /// A protocol error: drop the connection.
        case fail(NearbyError)
    }

    private enum State: Sendable, Hashable {
        case idle
        case awaitingReady
        case awaitingDataRequest
        case awaitingIntroduction
        case established
        case closed
    }

    /// The data path.
    package let path: Path
    /// Whether this side connected (the client).
    package let isClient: Bool
    /// The hash of the established socket's service; for a client, its service from the start.
    package private(set) var serviceIDHash: [UInt8]
    private let acceptedHashes: Set<[UInt8]>
    private var state: State

    /// A client socket for the service with `serviceIDHash`.
    package static func client(path: Path, serviceIDHash: [UInt8]) -> BleSocketMachine {
        BleSocketMachine(path: path, isClient: true, serviceIDHash: serviceIDHash, accepted: [serviceIDHash])
    }

    /// A client socket already established (its handshake done elsewhere, or not wanted: benchmarks and tests
    /// over raw channels).
    package static func establishedClient(path: Path, serviceIDHash: [UInt8]) -> BleSocketMachine {
        var machine = client(path: path, serviceIDHash: serviceIDHash)
        machine.state = .established
        return machine
    }

    /// A server socket accepting the services with these hashes.
    package static func server(path: Path, acceptedServiceIDHashes: Set<[UInt8]>) -> BleSocketMachine {
        BleSocketMachine(path: path, isClient: false, serviceIDHash: [], accepted: acceptedServiceIDHashes)
    }

    private init(path: Path, isClient: Bool, serviceIDHash: [UInt8], accepted: Set<[UInt8]>) {
        self.path = path
        self.isClient = isClient
        self.serviceIDHash = serviceIDHash
        self.acceptedHashes = accepted
        self.state = .idle
    }

    /// Whether data may flow.
    package var isEstablished: Bool { state == .established }
    /// Whether the socket ended.
    package var isClosed: Bool { state == .closed }

    /// Starts the socket once the data path is up (the L2CAP channel open, the Weave handshake done).
    package mutating func start() -> [Action] {
        guard state == .idle else { return [] }
        switch (isClient, path) {
        case (true, .l2cap):
            state = .awaitingReady
            return [.send(BleL2CAPCommand(.requestDataConnection).encodedBytes)]
        case (true, .gatt):
            return introduce()
        case (false, .l2cap):
            state = .awaitingDataRequest
            return []
        case (false, .gatt):
            state = .awaitingIntroduction
            return []
        }
    }

    /// Feeds one received message.
    package mutating func receive(_ message: [UInt8]) -> [Action] {
        switch state {
        case .idle, .closed:
            return []
        case .awaitingReady:
            guard let command = try? BleL2CAPCommand(decoding: message) else {
                return fail("expected the data-connection answer, got \(message.count) other bytes")
            }
            switch command.code {
            case .responseDataConnectionReady:
                return introduce()
            case .responseDataConnectionFailure:
                state = .closed
                return [.fail(NearbyError(.connectionRejected, "the peer refused the BLE L2CAP data connection"))]
            default:
                return []
            }
        case .awaitingDataRequest:
            if let command = try? BleL2CAPCommand(decoding: message) {
                switch command.code {
                case .requestDataConnection:
                    state = .awaitingIntroduction
                    return [.send(BleL2CAPCommand(.responseDataConnectionReady).encodedBytes)]
                case .requestAdvertisement:
                    return [.send(BleL2CAPCommand(.responseAdvertisement).encodedBytes)]
                default:
                    return []
                }
            }
            // A client that introduces itself without the command (the open-source C++ core's order).
            return receiveIntroduction(message)
        case .awaitingIntroduction:
            return receiveIntroduction(message)
        case .established:
            return receiveEstablished(message)
        }
    }

    /// The data packet carrying `bytes` of the stream.
    package func dataMessage(_ bytes: [UInt8]) -> [UInt8] {
        serviceIDHash + bytes
    }

    /// The disconnection packet, once; nothing before the socket was established or after it ended.
    package mutating func disconnect() -> [Action] {
        defer { state = .closed }
        guard state == .established else { return [] }
        return [.send(BleSocketPacket.disconnection(serviceIDHash: serviceIDHash).encodedBytes)]
    }

    private mutating func introduce() -> [Action] {
        state = .established
        return [
            .send(BleSocketPacket.introduction(serviceIDHash: serviceIDHash).encodedBytes),
            .established(serviceIDHash: serviceIDHash),
        ]
    }

    private mutating func receiveIntroduction(_ message: [UInt8]) -> [Action] {
        let packet: BleSocketPacket
        do {
            packet = try BleSocketPacket(decoding: message)
        } catch {
            state = .closed
            return [.fail(error)]
        }
        guard case .introduction(let hash) = packet else {
            return fail("expected an introduction, got a \(packet.isControl ? "control" : "data") packet")
        }
        guard acceptedHashes.contains(hash) else {
            return fail("the peer introduced service hash \(Hex.encode(hash)), which is not advertised here")
        }
        serviceIDHash = hash
        state = .established
        return [.established(serviceIDHash: hash)]
    }

    private mutating func receiveEstablished(_ message: [UInt8]) -> [Action] {
        let packet: BleSocketPacket
        do {
            packet = try BleSocketPacket(decoding: message)
        } catch {
            state = .closed
            return [.fail(error)]
        }
        switch packet {
        case .data(let hash, let payload):
            guard hash == serviceIDHash else {
                return fail("a data packet for service hash \(Hex.encode(hash)), expected \(Hex.encode(serviceIDHash))")
            }
            var actions: [Action] = []
            if path == .l2cap {
                let ack = BleSocketPacket.acknowledgement(serviceIDHash: serviceIDHash, receivedSize: Int32(clamping: message.count))
                actions.append(.send(ack.encodedBytes))
            }
            if !payload.isEmpty { actions.append(.deliver(payload)) }
            return actions
        case .disconnection:
            state = .closed
            return [.disconnected]
        case .acknowledgement, .introduction:
            return []
        }
    }

    private mutating func fail(_ message: String) -> [Action] {
        state = .closed
        return [.fail(NearbyError(.malformedBLESocketPacket, "BLE socket: \(message)"))]
    }
}
