import NearbyCore
import NearbyWire

/// One end of an in-memory, framed, bidirectional pipe: what ``InMemoryMedium`` connects endpoints with.
///
/// Tests can also drive a pair directly (``pair(medium:)``) to play a peer frame by frame.
public final class InMemoryChannel: EndpointChannel, @unchecked Sendable {
    /// The medium this channel says it runs over.
    public let medium: MediumKind
    /// `memory-a` or `memory-b`.
    public let peerDescription: String
    private let inbound: AsyncStream<[UInt8]>
    // Read by one task at a time (the session's reader), as EndpointChannel requires.
    private var iterator: AsyncStream<[UInt8]>.Iterator
    private let outbound: AsyncStream<[UInt8]>.Continuation
    private let ownInbound: AsyncStream<[UInt8]>.Continuation
    /// When set, writes are silently dropped (a peer that froze).
    public let isFrozen = LockedValue(false)
    /// When set, writes never complete until the channel is closed (a peer that stopped reading, or that grants
    /// no more BLE L2CAP credits); they then throw.
    public let stallsWrites = LockedValue(false)
    /// How many writes are stuck now because of ``stallsWrites``.
    public let stalledWrites = LockedValue(0)
    /// How many writes got stuck because of ``stallsWrites`` since the channel was made (stuck now or failed since).
    public let stalledWritesSoFar = LockedValue(0)
    private let closedSignal = LockedValue<(closed: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(name: String, medium: MediumKind, inbound: AsyncStream<[UInt8]>, ownInbound: AsyncStream<[UInt8]>.Continuation,
         outbound: AsyncStream<[UInt8]>.Continuation) {
        peerDescription = name
        self.medium = medium
        self.inbound = inbound
        iterator = inbound.makeAsyncIterator()
        self.ownInbound = ownInbound
        self.outbound = outbound
    }

    /// A connected pair of channels that report `medium`.
    public static func pair(medium: MediumKind = .wifiLAN) -> (InMemoryChannel, InMemoryChannel) {
        let (a, aContinuation) = AsyncStream<[UInt8]>.makeStream()
        let (b, bContinuation) = AsyncStream<[UInt8]>.makeStream()
        return (
            InMemoryChannel(name: "memory-a", medium: medium, inbound: a, ownInbound: aContinuation, outbound: bContinuation),
            InMemoryChannel(name: "memory-b", medium: medium, inbound: b, ownInbound: bContinuation, outbound: aContinuation)
        )
    }

    /// The next frame the other end wrote, or `nil` once it closed.
    public func readFrame() async throws -> [UInt8]? {
        await iterator.next()
    }

    /// Hands `body` to the other end (dropped while frozen, held while writes stall).
    /// - Throws: `NearbyError` `.invalidFraming` over the frame limit, `.endpointIoError` once the other
    ///   end is gone or the channel closed under a stalled write.
    public func writeFrame(_ body: [UInt8]) async throws {
        guard body.count <= LengthPrefixFraming.maxFrameLength else {
            throw NearbyError(.invalidFraming, "frame too large")
        }
        if isFrozen.withLock({ $0 }) { return }
        if stallsWrites.withLock({ $0 }) {
            stalledWrites.withLock { $0 += 1 }
            stalledWritesSoFar.withLock { $0 += 1 }
            await withCheckedContinuation { waiter in
                let closed = closedSignal.withLock { state -> Bool in
                    if !state.closed { state.waiters.append(waiter) }
                    return state.closed
                }
                if closed { waiter.resume() }
            }
            stalledWrites.withLock { $0 -= 1 }
            throw NearbyError(.endpointIoError, "the in-memory channel closed under a stalled write")
        }
        if case .terminated = outbound.yield(body) {
            throw NearbyError(.endpointIoError, "the in-memory peer is gone")
        }
    }

    /// Closes both directions; stalled writes fail.
    public func close() async {
        outbound.finish()
        ownInbound.finish()
        let waiters = closedSignal.withLock { state in
            state.closed = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

