import Foundation
import NearbyCore

/// A found or lost message, as a subscription's `AsyncSequence` delivers it.
public struct MessageEvent: Sendable, Hashable {
    /// Found or lost.
    public enum Kind: String, Sendable, Hashable {
        /// The message is nearby.
        case found
        /// The message is no longer nearby (unpublished, out of range, or a beacon unseen for too long).
        case lost
    }

    /// Found or lost.
    public var kind: Kind
    /// The message.
    public var message: Message
    /// For beacon messages: the beacon sighting (RSSI, estimated distance, the decoded frame).
    public var beacon: Beacon?

    /// Creates an event.
    public init(kind: Kind, message: Message, beacon: Beacon? = nil) {
        self.kind = kind
        self.message = message
        self.beacon = beacon
    }
}

/// Fans found/lost events out to any number of `AsyncStream`s. A stream made later starts with a `found` event for
/// everything found and not yet lost (in the order it was found), so a listener that arrives after the first
/// sightings misses nothing; registration and delivery share one lock, so nothing is seen twice or skipped.
///
/// Each stream buffers at most ``maxBuffered`` events its consumer has not taken; beyond that the oldest buffered
/// ones are dropped (the newest kept), so a consumer that stopped iterating cannot make memory grow.
final class EventFanOut: Sendable {
    /// The most events one stream buffers for a consumer that does not keep up.
    static let maxBuffered = 65_536

    private struct State {
        var subscribers: [UUID: AsyncStream<MessageEvent>.Continuation] = [:]
        var current: [EventKey: MessageEvent] = [:]
        var order: [EventKey] = []
        var finished = false
    }

    /// What a found event and its lost event share: the beacon (address and frame kind) or the message.
    private enum EventKey: Hashable {
        case beacon(address: String, kind: String)
        case message(Message)

        init(_ event: MessageEvent) {
            if let beacon = event.beacon {
                self = .beacon(address: beacon.address, kind: beacon.frame.kind)
            } else {
                self = .message(event.message)
            }
        }
    }

    /// Streams are yielded to and finished after the lock is released, in the order of the events (the lock
    /// rule, docs/ARCHITECTURE.md).
    private let state = LockedOutbox(State())

    func stream() -> AsyncStream<MessageEvent> {
        let (stream, continuation) = AsyncStream<MessageEvent>.makeStream(bufferingPolicy: .bufferingNewest(Self.maxBuffered))
        let key = UUID()
        let finished = state.withLock { state, outbox -> Bool in
            guard !state.finished else {
                outbox.post { continuation.finish() }
                return true
            }
            let replay = state.order.compactMap { state.current[$0] }
            if !replay.isEmpty { outbox.post { for event in replay { continuation.yield(event) } } }
            state.subscribers[key] = continuation
            return false
        }
        if finished { return stream }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    func yield(_ event: MessageEvent) {
        state.withLock { state, outbox in
            let eventKey = EventKey(event)
            switch event.kind {
            case .found:
                if state.current.updateValue(event, forKey: eventKey) == nil { state.order.append(eventKey) }
            case .lost:
                if state.current.removeValue(forKey: eventKey) != nil { state.order.removeAll { $0 == eventKey } }
            }
            let subscribers = Array(state.subscribers.values)
            outbox.post { for continuation in subscribers { continuation.yield(event) } }
        }
    }

    func finish() {
        state.withLock { state, outbox in
            state.finished = true
            let subscribers = Array(state.subscribers.values)
            state.subscribers = [:]
            outbox.post { for continuation in subscribers { continuation.finish() } }
        }
    }
}
