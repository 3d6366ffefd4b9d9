import Foundation
import NearbySecurity
import NearbyWire

/// Frames on their way from the writer's queue to the channel, possibly being sealed on other tasks, handed back
/// strictly in the order they were taken.
///
/// The ``OutboundFrameWriter`` takes a frame, reserves its D2D sequence number (in the order it will be written) and
/// either seals it at once or lets a child task of its own seal it (``SealingWidth``): a SecureMessage does not
/// depend on the one before it (a fresh IV each), only its sequence number orders it. Whatever finishes first, the
/// writer gets the frames back here in ticket order (``takeReadyHead()``), so the sequence numbers on the wire still
/// count up by one. A finished seal calls `onReady` (after this type's lock is released) so that a writer waiting
/// for its queue wakes up to write it.
final class SealedFrameOrder: Sendable {
    private struct State {
        var nextTicket = 0
        var headTicket = 0
        var done: [Int: Result<[UInt8], NearbyError>] = [:]
    }

    private let state = LockedValue(State())
    private let onReady: @Sendable () -> Void

    /// - Parameter onReady: Called, without any lock held, each time a seal finished on another task.
    init(onReady: @escaping @Sendable () -> Void) {
        self.onReady = onReady
    }

    /// Frames taken but not yet handed back (being sealed, or sealed and waiting for the ones before them).
    var count: Int { state.withLock { $0.nextTicket - $0.headTicket } }

    /// A place in the order for a frame that will be sealed elsewhere; pass it to ``complete(_:with:)``.
    func reserve() -> Int {
        state.withLock { state in
            defer { state.nextTicket += 1 }
            return state.nextTicket
        }
    }

    /// A frame that is ready now (plain, or sealed on the writer's own task), after those taken before it.
    func append(_ result: Result<[UInt8], NearbyError>) {
        state.withLock { state in
            state.done[state.nextTicket] = result
            state.nextTicket += 1
        }
    }

    /// Hands back the frame of `ticket` once it is sealed (from the sealing task).
    func complete(_ ticket: Int, with result: Result<[UInt8], NearbyError>) {
        state.withLock { $0.done[ticket] = result }
        onReady()
    }

    /// The next frame in order if it is ready; `nil` while it is still being sealed (or none is taken).
    func takeReadyHead() -> Result<[UInt8], NearbyError>? {
        state.withLock { state in
            guard let result = state.done.removeValue(forKey: state.headTicket) else { return nil }
            state.headTicket += 1
            return result
        }
    }
}

/// How many tasks seal an endpoint's outgoing frames at once.
///
/// One is the old behaviour (the writer seals each frame itself, then writes it). More lets large frames (file
/// and stream chunks, BYTES) be sealed on that many of Swift's cooperative threads at once while the writer writes
/// the earlier ones in order; small frames are always sealed by the writer itself, the hop would cost more than the
/// cipher. The default is the machine's active processor count, at most 4; the environment variable
/// `NEARBY_SEALING_TASKS` (1–16) overrides it for measurements (read once per process).
package enum SealingWidth {
    /// The smallest serialized frame worth sealing on another task.
    package static let parallelThreshold = 16 * 1024

    /// The width writers use unless told otherwise.
    package static let `default`: Int = {
        if let text = getenv("NEARBY_SEALING_TASKS").map({ String(cString: $0) }), let value = Int(text),
            (1...16).contains(value)
        {
            return value
        }
        return min(max(ProcessInfo.processInfo.activeProcessorCount, 1), 4)
    }()
}
