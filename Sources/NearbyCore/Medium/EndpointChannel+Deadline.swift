import NearbyWire

extension EndpointChannel {
    /// Runs `body`, closing the channel when it takes longer than `timeout` of `clock`, or at once when the calling
    /// task is cancelled: closing ends the channel's pending reads and fails its pending writes, so `body` cannot
    /// wait on this channel past the deadline, nor past its caller's cancellation (a write stuck on a full buffer
    /// does not notice cancellation by itself).
    func closing<T: Sendable>(
        after timeout: Duration, clock: NearbyClock, _ body: () async throws -> T
    ) async throws -> T {
        let finished = LockedValue(false)
        // Owner: this call, which cancels it when `body` returns (it then ends at once) and when the caller is
        // cancelled (it then closes the channel at once).
        let timer = Task {
            try? await clock.sleep(for: timeout)
            guard !finished.withLock({ $0 }) else { return }
            await self.close()
        }
        defer {
            finished.withLock { $0 = true }
            timer.cancel()
        }
        return try await withTaskCancellationHandler {
            try await body()
        } onCancel: {
            timer.cancel()
        }
    }

    /// Reads one frame, closing the channel when none arrives within `timeout` of `clock` (which ends the read).
    func readFirstFrame(within timeout: Duration, clock: NearbyClock) async throws -> [UInt8] {
        guard let body = try await closing(after: timeout, clock: clock, { try await readFrame() }) else {
            throw NearbyError(.timeout, "no frame within \(timeout) on \(peerDescription)")
        }
        return body
    }
}
