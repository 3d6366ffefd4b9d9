import NearbyWire

/// Names one credit-based channel: the LE connection and our channel ID on it.
package struct L2CAPChannelKey: Hashable, Sendable {
    /// The LE connection handle.
    package let handle: UInt16
    /// Our channel ID.
    package let localCID: UInt16

    /// Creates a key.
    package init(handle: UInt16, localCID: UInt16) {
        self.handle = handle
        self.localCID = localCID
    }
}

/// What the host needs to hand out an ``L2CAPChannel`` for an open channel.
package struct CreditChannelInfo: Sendable, Hashable {
    /// The channel.
    package let key: L2CAPChannelKey
    /// The peer's channel ID.
    package let remoteCID: UInt16
    /// The largest SDU the peer accepts.
    package let peerMTU: Int
    /// The largest K-frame payload the peer accepts.
    package let peerMPS: Int
}

/// The state of one open LE credit-based channel, as a value: the credits each side holds, inbound SDU
/// reassembly and the queue of SDUs no reader has taken yet, and whether it closed.
///
/// Our credits go back to the peer in batches: a K-frame of an unfinished SDU is credited back at once (memory is
/// bounded by our MTU, and an SDU needing more K-frames than our initial credits cannot deadlock); the last K-frame
/// of an SDU is credited back when a reader takes the SDU, so queued SDUs are bounded by our initial credits.
package struct CreditChannel: Sendable {
    /// Identity and the peer's limits.
    package let info: CreditChannelInfo
    /// Credits the peer granted us: K-frames we may still send.
    package private(set) var peerCredits: Int
    private var localCreditsOutstanding: Int
    private let initialLocalCredits: Int
    private var creditsToReturn = 0
    private var reassembler: KFrameReassembler
    private var inbound: [[UInt8]] = []
    /// Whether a reader waits for the next SDU.
    package private(set) var readerWaiting = false
    /// Whether the channel closed (disconnected, connection lost, protocol violation).
    package private(set) var isClosed = false
    /// Why it closed; `nil` for a clean close.
    package private(set) var closedError: NearbyError?

    /// Opens a channel with the peer's parameters and ours.
    package init(key: L2CAPChannelKey, remoteCID: UInt16, peer: CreditChannelParameters, ours: CreditChannelParameters) {
        info = CreditChannelInfo(key: key, remoteCID: remoteCID, peerMTU: Int(peer.mtu), peerMPS: Int(peer.mps))
        peerCredits = Int(peer.credits)
        localCreditsOutstanding = Int(ours.credits)
        initialLocalCredits = Int(ours.credits)
        reassembler = KFrameReassembler(mtu: Int(ours.mtu), mps: Int(ours.mps))
    }

    /// Whether SDUs wait for a reader.
    package var hasQueuedSDUs: Bool { !inbound.isEmpty }

    /// What one inbound K-frame led to.
    package enum FrameOutcome: Equatable, Sendable {
        /// Part of an SDU; nothing for the reader yet.
        case partial
        /// A complete SDU for the waiting reader.
        case deliver([UInt8])
        /// A complete SDU, queued for the next read.
        case queued
    }

    /// Feeds one K-frame information payload. Returns the outcome and the credits to grant the peer now (0 for
    /// none).
    /// - Throws: `.malformedL2CAPPacket` when the peer sent without credits or broke MPS, MTU or SDU framing; the
    ///   channel must then be disconnected.
    package mutating func receive(_ payload: [UInt8]) throws -> (FrameOutcome, grant: Int) {
        localCreditsOutstanding -= 1
        guard localCreditsOutstanding >= 0 else {
            throw NearbyError(.malformedL2CAPPacket, "the peer sent a K-frame without credits")
        }
        guard let complete = try reassembler.append(payload) else {
            return (.partial, returnCredits(1))
        }
        if readerWaiting {
            readerWaiting = false
            return (.deliver(complete.sdu), returnCredits(1))
        }
        inbound.append(complete.sdu)
        return (.queued, 0)
    }

    /// What a read finds.
    package enum ReadOutcome: Sendable {
        /// The next SDU.
        case sdu([UInt8])
        /// Nothing yet: the reader waits (and is marked waiting).
        case wait
        /// The channel closed; `nil` for a clean close.
        case closed(NearbyError?)
        /// A reader already waits.
        case busy
    }

    /// A reader asks for the next SDU. Returns the outcome and the credits to grant the peer now.
    package mutating func read() -> (ReadOutcome, grant: Int) {
        if !inbound.isEmpty {
            let sdu = inbound.removeFirst()
            return (.sdu(sdu), returnCredits(1))
        }
        if isClosed { return (.closed(closedError), 0) }
        if readerWaiting { return (.busy, 0) }
        readerWaiting = true
        return (.wait, 0)
    }

    /// The peer granted `credits` more.
    /// - Throws: `.malformedL2CAPPacket` when it now holds more than 65535.
    package mutating func addPeerCredits(_ credits: UInt16) throws {
        peerCredits += Int(credits)
        guard peerCredits <= Int(L2CAPConstants.maximumCredits) else {
            throw NearbyError(.malformedL2CAPPacket, "the peer granted more than 65535 credits")
        }
    }

    /// Takes one credit to send a K-frame; `false` when the peer granted none.
    package mutating func takeCredit() -> Bool {
        guard !isClosed, peerCredits > 0 else { return false }
        peerCredits -= 1
        return true
    }

    /// Marks the channel closed. Returns whether a reader was waiting (it gets `error`, or the end for `nil`).
    package mutating func close(_ error: NearbyError?) -> Bool {
        guard !isClosed else { return false }
        isClosed = true
        closedError = error
        defer { readerWaiting = false }
        return readerWaiting
    }

    private mutating func returnCredits(_ count: Int) -> Int {
        guard !isClosed else { return 0 }
        creditsToReturn += count
        guard localCreditsOutstanding <= initialLocalCredits / 2 else { return 0 }
        let grant = creditsToReturn
        localCreditsOutstanding += grant
        creditsToReturn = 0
        return grant
    }
}
