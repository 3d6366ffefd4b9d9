import NearbyWire

extension EndpointChannel {
    /// Runs `body`, closing the channel when it takes longer than `timeout` of `clock`: closing ends the channel's
    /// pending reads and fails its pending writes, so `body` cannot wait on this channel past the deadline.
    func closing<T: Sendable>(
        after timeout: Duration, clock: NearbyClock, _ body: () async throws -> T
    ) async throws -> T {
        // Owner: this call, which cancels it when `body` returns; it ends at once then, or closes the channel.
        let timer = Task {
            try await clock.sleep(for: timeout)
            await self.close()
        }
        defer { timer.cancel() }
        return try await body()
    }

    /// Reads one frame, closing the channel when none arrives within `timeout` of `clock` (which ends the read).
    func readFirstFrame(within timeout: Duration, clock: NearbyClock) async throws -> [UInt8] {
        guard let body = try await closing(after: timeout, clock: clock, { try await readFrame() }) else {
            throw NearbyError(.timeout, "no frame within \(timeout) on \(peerDescription)")
        }
        return body
    }
}
