import Logging
import NearbyWire

/// The offering side of a bandwidth upgrade (protocol reference §9.4 step 3): reads the CLIENT_INTRODUCTION of
/// every channel the upgrade listener accepts, concurrently and each within its own deadline, and hands over the
/// channels that introduce the expected endpoint.
///
/// Anyone on the LAN can connect to the listener, so strangers (silent sockets, other hosts, port scanners) must
/// not delay the peer's own introduction: no channel waits for another one's read. At most
/// ``maxConcurrentReads`` channels are read at once; a channel arriving while that many are being read is closed
/// at once. Ending ``introduced`` (``finish()``) closes every channel still being read or not yet claimed.
final class UpgradeIntroductions: Sendable {
    /// The most accepted channels whose introduction is read at the same time.
    static let maxConcurrentReads = 8

    /// A channel that introduced the expected endpoint; ``UpgradeIntroductions/claim(_:)`` it before use.
    struct Introduced: Sendable {
        let slot: Int
        let channel: any EndpointChannel
    }

    /// Channels that introduced the expected endpoint, in the order the introductions arrived.
    let introduced: AsyncStream<Introduced>
    private let continuation: AsyncStream<Introduced>.Continuation
    private let channels: OpenChannels
    private let endpointID: String
    private let timeout: Duration
    private let clock: NearbyClock
    private let logger: Logger

    /// Expects introductions from `endpointID`, each within `timeout` of `clock` from its channel's arrival.
    init(endpointID: String, timeout: Duration, clock: NearbyClock = .continuous, logger: Logger) {
        self.clock = clock
        (introduced, continuation) = AsyncStream.makeStream()
        let channels = OpenChannels()
        self.channels = channels
        self.endpointID = endpointID
        self.timeout = timeout
        self.logger = logger
        continuation.onTermination = { _ in
            let leftovers = channels.closeAll()
            guard !leftovers.isEmpty else { return }
            // Owner: none (an `onTermination` handler cannot await); it ends once these channels are closed.
            Task { for channel in leftovers { await channel.close() } }
        }
    }

    /// Takes a channel the upgrade listener accepted and starts reading its introduction.
    func accept(_ channel: any EndpointChannel) {
        guard let slot = channels.add(channel, limit: Self.maxConcurrentReads) else {
            logger.notice(
                "refusing an upgrade channel: too many introductions being read, or the upgrade is over",
                metadata: ["peer": "\(channel.peerDescription)"])
            // Owner: none (the listener's accept handler cannot await); it ends once the channel is closed.
            Task { await channel.close() }
            return
        }
        let endpointID = self.endpointID
        let timeout = self.timeout
        let clock = self.clock
        let logger = self.logger
        let continuation = self.continuation
        let channels = self.channels
        // Owner: none; it ends within `timeout` (`readFirstFrame` closes the channel then), and a channel it hands
        // over after ``finish()`` is closed here.
        Task {
            do {
                try await Self.readIntroduction(on: channel, from: endpointID, within: timeout, clock: clock)
            } catch {
                logger.notice("refusing an upgrade channel", metadata: ["peer": "\(channel.peerDescription)", "error": "\(error)"])
                channels.remove(slot)
                await channel.close()
                return
            }
            if case .terminated = continuation.yield(Introduced(slot: slot, channel: channel)), channels.remove(slot) {
                await channel.close()
            }
        }
    }

    /// Takes an introduced channel over; `false` when it was already closed because the upgrade is over.
    func claim(_ introduced: Introduced) -> Bool {
        channels.remove(introduced.slot)
    }

    /// Stops reading: closes every channel not claimed yet; later arrivals are closed at once.
    func finish() {
        continuation.finish()
    }

    /// Reads the first frame within `timeout` and checks it is a CLIENT_INTRODUCTION from `endpointID`.
    static func readIntroduction(
        on channel: any EndpointChannel, from endpointID: String, within timeout: Duration, clock: NearbyClock
    ) async throws {
        let body = try await channel.readFirstFrame(within: timeout, clock: clock)
        guard case .bandwidthUpgradeNegotiation(let frame) = try OfflineFrameParser.parse(body),
            frame.eventType == .clientIntroduction
        else {
            throw NearbyError(.invalidFrame, "the first frame on the upgraded channel is not CLIENT_INTRODUCTION")
        }
        guard frame.clientIntroduction.endpointID == endpointID else {
            throw NearbyError(
                .invalidFrame, "CLIENT_INTRODUCTION from \(frame.clientIntroduction.endpointID), expected \(endpointID)")
        }
    }
}

/// The channels an ``UpgradeIntroductions`` holds open (being read, or introduced and not claimed yet).
private final class OpenChannels: Sendable {
    private struct State {
        var open: [Int: any EndpointChannel] = [:]
        var nextSlot = 0
        var finished = false
    }

    private let state = LockedValue(State())

    /// Registers `channel`; `nil` when finished or `limit` channels are open.
    func add(_ channel: any EndpointChannel, limit: Int) -> Int? {
        state.withLock { state in
            guard !state.finished, state.open.count < limit else { return nil }
            let slot = state.nextSlot
            state.nextSlot += 1
            state.open[slot] = channel
            return slot
        }
    }

    /// Forgets a channel; `false` when it was not held (already closed by ``closeAll()``).
    @discardableResult
    func remove(_ slot: Int) -> Bool {
        state.withLock { $0.open.removeValue(forKey: slot) != nil }
    }

    /// Marks the set finished and returns the channels still held, for closing.
    func closeAll() -> [any EndpointChannel] {
        state.withLock { state in
            state.finished = true
            let channels = Array(state.open.values)
            state.open = [:]
            return channels
        }
    }
}
