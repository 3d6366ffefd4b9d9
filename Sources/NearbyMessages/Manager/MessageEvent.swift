import Foundation
import Synchronization

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

/// Fans events out to any number of `AsyncStream`s.
final class EventFanOut<Element: Sendable>: Sendable {
    private let state = Mutex<(subscribers: [UUID: AsyncStream<Element>.Continuation], finished: Bool)>(([:], false))

    func stream() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .unbounded)
        let key = UUID()
        let finished = state.withLock { state -> Bool in
            if !state.finished { state.subscribers[key] = continuation }
            return state.finished
        }
        if finished { continuation.finish() }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: key) }
        }
        return stream
    }

    func yield(_ element: Element) {
        for continuation in state.withLock({ Array($0.subscribers.values) }) { continuation.yield(element) }
    }

    func finish() {
        let continuations = state.withLock { state in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}
