/// Collects the elements of a stream in the background so that tests can poll them with a bound.
public actor StreamRecorder<Event: Sendable> {
    /// Everything received so far, in order.
    public private(set) var events: [Event] = []
    /// The error the stream ended with, if any.
    public private(set) var endError: (any Error)?
    /// Whether the stream ended.
    public private(set) var ended = false
    private var consumer: Task<Void, Never>?

    /// Starts consuming `stream`.
    public static func start(_ stream: AsyncThrowingStream<Event, any Error>) async -> StreamRecorder {
        let recorder = StreamRecorder()
        await recorder.consume(stream)
        return recorder
    }

    private func consume(_ stream: AsyncThrowingStream<Event, any Error>) {
        consumer = Task {
            do {
                for try await event in stream {
                    self.append(event)
                }
                self.finish(nil)
            } catch {
                self.finish(error)
            }
        }
    }

    private func append(_ event: Event) { events.append(event) }

    private func finish(_ error: (any Error)?) {
        endError = error
        ended = true
    }

    /// Stops consuming (cancelling the task ends the stream).
    public func stop() {
        consumer?.cancel()
    }

    /// Waits up to `seconds` for an event `match` accepts, and returns what it returned.
    public func waitFor<Value>(
        within seconds: Double = 15, _ what: String, _ match: (Event) -> Value?
    ) async throws -> Value {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while true {
            if let value = events.lazy.compactMap(match).first {
                return value
            }
            guard ContinuousClock.now < deadline else {
                throw TestTimeout(description: "timed out after \(seconds) s waiting for \(what); saw \(events)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits up to `seconds` for the stream to end.
    public func waitForEnd(within seconds: Double = 10) async throws {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !ended {
            guard ContinuousClock.now < deadline else {
                throw TestTimeout(description: "timed out after \(seconds) s waiting for the stream to end")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
