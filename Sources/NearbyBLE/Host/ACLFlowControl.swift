import NearbyWire

/// ACL data flow between the host and the controller as a value-type state machine: the controller's LE ACL
/// buffer credits (LE Read Buffer Size), one outbound queue per connection, Number Of Completed Packets, and the
/// fragmentation of outbound and reassembly of inbound L2CAP PDUs.
///
/// Outbound PDUs are split into ACL packets of the controller's buffer size and leave while it has free buffers:
/// each connection's PDUs in order (their fragments never interleave), connections taking turns packet by packet.
/// The host performs the returned ``Action``s.
package struct ACLFlowControl: Sendable {
    /// Identifies one outbound PDU.
    package typealias Ticket = Int

    /// What the host must do.
    package enum Action: Sendable {
        /// Write this H4 packet (indicator included) to the transport.
        case write([UInt8])
        /// Every fragment of PDU `Ticket` was handed to the controller.
        case sent(Ticket)
        /// PDU `Ticket` will not be sent.
        case failed(Ticket, NearbyError)
    }

    private struct Pending: Sendable {
        let ticket: Ticket
        var fragments: [ACLPacket]
    }

    private struct Link: Sendable {
        var reassembler = L2CAPReassembler()
        var inFlight = 0
        var queue: [Pending] = []
    }

    /// The largest ACL data length the controller accepts (at least 27).
    package private(set) var maxDataLength = 27
    /// The controller's number of LE ACL buffers.
    package private(set) var bufferCount = 1
    /// The controller's free ACL buffers as far as the host knows.
    package private(set) var credits = 1
    private var links: [UInt16: Link] = [:]
    private var turn: [UInt16] = []
    private var nextTicket: Ticket = 0
    private var failure: NearbyError?

    /// Creates the flow with the minimum buffer (one packet of 27 bytes) until ``setBufferSize(length:count:)``.
    package init() {}

    /// Applies the controller's buffer size (LE Read Buffer Size, or Read Buffer Size when the LE one is 0).
    package mutating func setBufferSize(length: Int, count: Int) {
        maxDataLength = max(27, length)
        bufferCount = max(1, count)
        credits = bufferCount
    }

    /// The number of ACL packets of connection `handle` the controller has not reported completed.
    package func packetsInFlight(_ handle: UInt16) -> Int? { links[handle]?.inFlight }

    /// Whether `handle` is a known connection.
    package func isOpen(_ handle: UInt16) -> Bool { links[handle] != nil }

    /// A connection was established.
    package mutating func connectionOpened(_ handle: UInt16) {
        guard failure == nil, links[handle] == nil else { return }
        links[handle] = Link()
        turn.append(handle)
    }

    /// A connection ended: its queued PDUs fail with `error`, and the buffers its unreported packets held are free
    /// again (the controller frees them without a Number Of Completed Packets event).
    package mutating func connectionClosed(_ handle: UInt16, _ error: NearbyError) -> [Action] {
        guard let link = links.removeValue(forKey: handle) else { return [] }
        turn.removeAll { $0 == handle }
        credits = min(bufferCount, credits + link.inFlight)
        return link.queue.map { .failed($0.ticket, error) } + drain()
    }

    /// Queues `pdu` (a complete L2CAP PDU) on connection `handle`.
    package mutating func send(handle: UInt16, pdu: [UInt8]) -> (Ticket, [Action]) {
        nextTicket += 1
        let ticket = nextTicket
        if let failure { return (ticket, [.failed(ticket, failure)]) }
        guard links[handle] != nil else {
            return (ticket, [.failed(ticket, NearbyError(.endpointIoError, "the LE connection \(handle) is gone"))])
        }
        let fragments = ACLPacket.fragments(handle: handle, pdu: pdu, maxDataLength: maxDataLength)
        links[handle]!.queue.append(Pending(ticket: ticket, fragments: fragments))
        return (ticket, drain())
    }

    /// Number Of Completed Packets: the controller freed buffers.
    package mutating func completed(_ entries: [CompletedPackets]) -> [Action] {
        for entry in entries {
            let count = Int(entry.count)
            if let inFlight = links[entry.handle]?.inFlight { links[entry.handle]?.inFlight = max(0, inFlight - count) }
            credits = min(bufferCount, credits + count)
        }
        return drain()
    }

    /// Feeds one inbound ACL packet; returns the complete L2CAP PDU (header included) it finishes, if any.
    /// - Throws: `.malformedHCIPacket` for an unknown connection, `.malformedL2CAPPacket` for a broken fragment
    ///   sequence (the connection's reassembly starts over).
    package mutating func receive(_ packet: ACLPacket) throws -> [UInt8]? {
        guard links[packet.handle] != nil else {
            throw NearbyError(.malformedHCIPacket, "ACL data for unknown handle \(packet.handle)")
        }
        return try links[packet.handle]!.reassembler.append(packet)
    }

    /// The host stopped: every queued PDU fails with `error`, and so does every later one.
    package mutating func failAll(_ error: NearbyError) -> [Action] {
        guard failure == nil else { return [] }
        failure = error
        let actions = turn.flatMap { handle in links[handle]?.queue.map { Action.failed($0.ticket, error) } ?? [] }
        links = [:]
        turn = []
        return actions
    }

    /// Hands fragments to the controller while it has free buffers, one per connection in turn.
    private mutating func drain() -> [Action] {
        var actions: [Action] = []
        while credits > 0, let index = turn.firstIndex(where: { !(links[$0]?.queue.isEmpty ?? true) }) {
            let handle = turn.remove(at: index)
            turn.append(handle)
            var link = links[handle]!
            let fragment = link.queue[0].fragments.removeFirst()
            credits -= 1
            link.inFlight += 1
            actions.append(.write(H4Packet.acl(fragment.encoded).encoded))
            if link.queue[0].fragments.isEmpty {
                actions.append(.sent(link.queue.removeFirst().ticket))
            }
            links[handle] = link
        }
        return actions
    }
}
