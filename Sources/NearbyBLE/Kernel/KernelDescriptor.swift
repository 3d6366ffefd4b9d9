import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import NearbyCore
import NearbyWire

/// A non-blocking socket descriptor with async waits for readiness, so that no thread of the cooperative pool ever
/// blocks in `read`, `write`, `accept` or `connect`.
///
/// Each wait arms a one-shot `DispatchSource` (epoll underneath) on one shared serial queue and resumes its caller
/// when the kernel reports the descriptor ready. ``close()`` shuts the socket down, cancels the armed sources (their
/// waiters throw) and refuses new waits; the descriptor itself is closed in `deinit`, once no operation can still be
/// using its number.
package final class KernelDescriptor: Sendable {
    private struct State {
        var closed = false
        var sources: [Int: UncheckedSource] = [:]
        var nextID = 0
    }

    /// A dispatch source kept under the lock (dispatch sources are thread-safe but not marked `Sendable`).
    private struct UncheckedSource: @unchecked Sendable {
        let source: any DispatchSourceProtocol
    }

    /// The descriptor.
    package let fd: Int32
    private let state = LockedValue(State())
    private static let queue = DispatchQueue(label: "nearby.ble.kernel-sockets")

    /// Takes ownership of `fd` (already non-blocking).
    package init(fd: Int32) {
        self.fd = fd
    }

    deinit {
        Glibc.close(fd)
    }

    /// Whether ``close()`` was called.
    package var isClosed: Bool { state.withLock { $0.closed } }

    /// Suspends until `fd` is readable (or has an error or hang-up pending).
    /// - Throws: `.endpointIoError` when the descriptor is closed before or while waiting.
    package func waitReadable() async throws {
        try await wait(read: true)
    }

    /// Suspends until `fd` is writable (or has an error or hang-up pending).
    /// - Throws: `.endpointIoError` when the descriptor is closed before or while waiting.
    package func waitWritable() async throws {
        try await wait(read: false)
    }

    private func wait(read: Bool) async throws {
        let fd = self.fd
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let source: any DispatchSourceProtocol = read
                ? DispatchSource.makeReadSource(fileDescriptor: fd, queue: Self.queue)
                : DispatchSource.makeWriteSource(fileDescriptor: fd, queue: Self.queue)
            let id: Int? = state.withLock { state in
                guard !state.closed else { return nil }
                state.nextID += 1
                state.sources[state.nextID] = UncheckedSource(source: source)
                return state.nextID
            }
            guard let id else {
                continuation.resume(throwing: NearbyError(.endpointIoError, "the L2CAP socket is closed"))
                return
            }
            let fired = LockedValue(false)
            let wrapped = UncheckedSource(source: source)
            source.setEventHandler {
                fired.withLock { $0 = true }
                wrapped.source.cancel()
            }
            source.setCancelHandler { [state] in
                state.withLock { _ = $0.sources.removeValue(forKey: id) }
                if fired.withLock({ $0 }) {
                    continuation.resume()
                } else {
                    continuation.resume(throwing: NearbyError(.endpointIoError, "the L2CAP socket was closed"))
                }
            }
            source.resume()
        }
    }

    /// Shuts the socket down (an open channel is disconnected), wakes every waiter with an error and refuses new
    /// waits. Idempotent.
    package func close() {
        let sources: [UncheckedSource]? = state.withLock { state in
            guard !state.closed else { return nil }
            state.closed = true
            return Array(state.sources.values)
        }
        guard let sources else { return }
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
        for entry in sources { entry.source.cancel() }
    }
}
