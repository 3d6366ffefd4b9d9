import NearbyBLE
import NearbyCore
import NearbyWire

/// A fake HCI controller behind the ``HCITransport`` protocol, so that ``BLEHost`` runs in tests without Bumble.
///
/// Every command the host writes is answered at once from a script: by default a successful Command Complete (for
/// LE Read Buffer Size: 27-byte buffers, ``bufferCount`` of them), replaced per opcode with ``reply(to:with:)``
/// (another answer, Command Status, raw events, or silence to make a command time out). Tests read what the host
/// wrote with ``nextWrite(where:)`` (no polling: it suspends until such a packet arrives) and play the controller
/// or the peer with ``deliver(_:)``.
package final class ScriptedHCITransport: HCITransport {
    /// How the fake controller answers one command.
    package enum Reply: Sendable {
        /// Command Complete with these return parameters (status first).
        case complete([UInt8])
        /// Command Status with this status.
        case status(UInt8)
        /// Command Status 0, then these H4 packets (for example an LE Connection Complete event).
        case statusThen([[UInt8]])
        /// No answer at all.
        case silence
    }

    private struct Waiter {
        let predicate: @Sendable (H4Packet) -> Bool
        let continuation: CheckedContinuation<H4Packet, Never>
    }

    private struct State {
        var replies: [UInt16: Reply] = [:]
        var unread: [H4Packet] = []
        var commands: [HCIOpcode] = []
        var waiters: [Waiter] = []
        var closed = false
    }

    package let description = "scripted controller"
    package let inbound: AsyncThrowingStream<[UInt8], any Error>
    private let continuation: AsyncThrowingStream<[UInt8], any Error>.Continuation
    private let state = LockedValue(State())

    /// Creates a controller with `bufferCount` LE ACL buffers of `bufferLength` bytes and, when `extended`, the LE
    /// Extended Advertising feature.
    package init(bufferLength: UInt16 = 27, bufferCount: UInt8 = 4, extended: Bool = false) {
        (inbound, continuation) = AsyncThrowingStream.makeStream(of: [UInt8].self, throwing: (any Error).self)
        reply(to: .leReadBufferSize, with: .complete([0, UInt8(bufferLength & 0xFF), UInt8(bufferLength >> 8), bufferCount]))
        reply(to: .leReadLocalFeatures, with: .complete([0, 0, extended ? 0x10 : 0, 0, 0, 0, 0, 0, 0]))
        reply(to: .leCreateConnection, with: .status(0))
        reply(to: .disconnect, with: .status(0))
    }

    /// Answers every later `opcode` command with `reply`.
    package func reply(to opcode: HCIOpcode, with reply: Reply) {
        state.withLock { $0.replies[opcode.rawValue] = reply }
    }

    /// Whether the host closed this transport.
    package var isClosed: Bool { state.withLock { $0.closed } }

    /// The opcodes of every command written so far, in order.
    package var commands: [HCIOpcode] { state.withLock { $0.commands } }

    /// Sends H4 bytes to the host as if the controller had.
    package func deliver(_ bytes: [UInt8]) {
        continuation.yield(bytes)
    }

    /// Ends the inbound stream with `error`, as when the controller goes away.
    package func fail(_ error: any Error) {
        continuation.finish(throwing: error)
    }

    /// Takes the oldest packet written by the host (and not taken yet) that satisfies `predicate`, waiting for one.
    package func nextWrite(where predicate: @escaping @Sendable (H4Packet) -> Bool) async -> H4Packet {
        await withCheckedContinuation { (continuation: CheckedContinuation<H4Packet, Never>) in
            let found: H4Packet? = state.withLock { state in
                if let index = state.unread.firstIndex(where: predicate) { return state.unread.remove(at: index) }
                state.waiters.append(Waiter(predicate: predicate, continuation: continuation))
                return nil
            }
            if let found { continuation.resume(returning: found) }
        }
    }

    /// Takes the next ACL packet the host wrote and returns its L2CAP channel ID and payload (single-fragment
    /// PDUs only, which holds for 27-byte buffers and small signals).
    package func nextL2CAP(cid: UInt16? = nil) async throws -> (handle: UInt16, cid: UInt16, payload: [UInt8]) {
        let packet = await nextWrite { packet in
            guard case .acl(let bytes) = packet, let acl = try? ACLPacket(decoding: bytes),
                let frame = try? L2CAPFrame.decode(acl.data)
            else { return false }
            return cid == nil || frame.cid == cid
        }
        guard case .acl(let bytes) = packet else { fatalError("nextWrite returned a non-ACL packet") }
        let acl = try ACLPacket(decoding: bytes)
        let frame = try L2CAPFrame.decode(acl.data)
        return (acl.handle, frame.cid, frame.payload)
    }

    package func write(_ bytes: [UInt8]) throws {
        var deframer = H4Deframer()
        deframer.append(bytes)
        guard let packet = try deframer.next() else {
            throw NearbyError(.endpointIoError, "the host wrote a partial H4 packet")
        }
        let (answer, resumed): ([[UInt8]], (Waiter, H4Packet)?) = try state.withLock { state in
            guard !state.closed else { throw NearbyError(.endpointIoError, "HCI transport \(description) is closed") }
            var answer: [[UInt8]] = []
            if case .command(let body) = packet, body.count >= 3 {
                let opcode = HCIOpcode(rawValue: UInt16(body[0]) | UInt16(body[1]) << 8)
                state.commands.append(opcode)
                answer = Self.answer(opcode, state.replies[opcode.rawValue] ?? .complete([0]))
            }
            if let index = state.waiters.firstIndex(where: { $0.predicate(packet) }) {
                return (answer, (state.waiters.remove(at: index), packet))
            }
            state.unread.append(packet)
            return (answer, nil)
        }
        if let (waiter, packet) = resumed { waiter.continuation.resume(returning: packet) }
        for event in answer { continuation.yield(event) }
    }

    package func close() {
        let wasOpen = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        if wasOpen { continuation.finish() }
    }

    private static func answer(_ opcode: HCIOpcode, _ reply: Reply) -> [[UInt8]] {
        switch reply {
        case .complete(let parameters): [HCIVectors.commandComplete(opcode, parameters)]
        case .status(let status): [HCIVectors.commandStatus(opcode, status: status)]
        case .statusThen(let packets): [HCIVectors.commandStatus(opcode, status: 0)] + packets
        case .silence: []
        }
    }
}

/// Real HCI packets as a controller sends them (H4 indicator included), for scripted tests.
package enum HCIVectors {
    /// Command Complete (one command credit) for `opcode` with `parameters` (status first).
    package static func commandComplete(_ opcode: HCIOpcode, _ parameters: [UInt8], credits: UInt8 = 1) -> [UInt8] {
        [0x04, 0x0E, UInt8(3 + parameters.count), credits, UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8)]
            + parameters
    }

    /// Command Status (one command credit) for `opcode`.
    package static func commandStatus(_ opcode: HCIOpcode, status: UInt8, credits: UInt8 = 1) -> [UInt8] {
        [0x04, 0x0F, 0x04, status, credits, UInt8(opcode.rawValue & 0xFF), UInt8(opcode.rawValue >> 8)]
    }

    /// LE Connection Complete: `handle` to `peer` (a random address), this side central or peripheral.
    package static func leConnectionComplete(handle: UInt16, peer: BLEAddress, central: Bool) -> [UInt8] {
        [0x04, 0x3E, 0x13, 0x01, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), central ? 0 : 1, 0x01]
            + peer.bytes + [0x18, 0x00, 0x00, 0x00, 0x48, 0x00, 0x00]
    }

    /// Disconnection Complete of `handle` with `reason`.
    package static func disconnectionComplete(handle: UInt16, reason: UInt8 = 0x13) -> [UInt8] {
        [0x04, 0x05, 0x04, 0x00, UInt8(handle & 0xFF), UInt8(handle >> 8), reason]
    }

    /// Number Of Completed Packets: `count` packets of `handle`.
    package static func completedPackets(handle: UInt16, count: UInt16) -> [UInt8] {
        [0x04, 0x13, 0x05, 0x01, UInt8(handle & 0xFF), UInt8(handle >> 8), UInt8(count & 0xFF), UInt8(count >> 8)]
    }

    /// One complete L2CAP PDU on `cid` as a single ACL packet from the controller.
    package static func l2cap(handle: UInt16, cid: UInt16, _ payload: [UInt8]) -> [UInt8] {
        H4Packet.acl(ACLPacket(handle: handle, boundary: .firstFlushable, data: L2CAPFrame.encode(cid: cid, payload: payload)).encoded)
            .encoded
    }
}
