import Dispatch
#if canImport(Glibc)
import Glibc
#endif
import NearbyCore
import NearbyWire

/// Reads the SDUs of a connected kernel L2CAP socket as soon as the kernel has them, and keeps them until
/// ``next()`` takes them.
///
/// Why a reader of its own: the kernel gives the peer of an LE credit-based channel new credits for every SDU it
/// has *queued* on the socket, not for room in the socket's receive buffer, whenever its buffer-based accounting is
/// off (it is whenever the MPS is small: a controller with 27-byte LE ACL buffers gives an MPS of 23), and it drops
/// an SDU that does not fit in the buffer without a trace. Each queued SDU is charged the buffers of all its
/// fragments, so a few SDUs fill the default buffer. A reader that read only when the engine asked for the next SDU
/// lost SDUs whenever the engine fell a few behind (the D2D sequence check then dropped the connection: the BlueZ
/// rig's test j, in the slow QEMU guest). This one reads on a dispatch queue of its own, outside the cooperative
/// pool, whenever the socket is readable.
///
/// Memory: at most about ``pauseBytes`` (16 MiB by default) are held, each SDU counted with its bookkeeping
/// (``overheadPerSDU`` bytes on top of its payload, so a flood of tiny SDUs is bounded too); beyond that reading
/// pauses (the kernel's buffer then fills and the kernel drops, which the D2D sequence check reports: the connection
/// ends) until the consumer has taken the backlog below half of it. So on these channels a reader that falls more
/// than ``pauseBytes`` behind (an app holding back a STREAM payload, say) ends the connection instead of slowing
/// the sender: back-pressure reaches the peer only through the engine's write deadlines, not through L2CAP credits.
package final class KernelSDUDrain: Sendable {
    /// How the stream of SDUs ended.
    private enum End: Sendable {
        /// The peer disconnected (every SDU it sent was read) or ``stop()`` was called.
        case closed
        /// A read failed.
        case failed(NearbyError)
    }

    private struct State: Sendable {
        var sdus: [[UInt8]] = []
        /// Index of the oldest SDU in `sdus` not yet taken.
        var head = 0
        var bytes = 0
        var peerDisconnected = false
        var end: End?
        /// Whether the source is suspended (backlog above `pauseBytes`).
        var paused = false
        var cancelled = false
        var waiter: CheckedContinuation<Void, Never>?

        var isEmpty: Bool { head == sdus.count }

        mutating func take() -> [UInt8] {
            let sdu = sdus[head]
            sdus[head] = []
            head += 1
            bytes -= sdu.count + KernelSDUDrain.overheadPerSDU
            if head > 64, head * 2 > sdus.count {
                sdus.removeFirst(head)
                head = 0
            }
            return sdu
        }
    }

    /// A dispatch source (thread-safe, but not marked `Sendable`).
    private struct UncheckedSource: @unchecked Sendable {
        let source: any DispatchSourceRead
    }

    /// Backlog above which reading pauses.
    package let pauseBytes: Int
    /// What one held SDU costs beyond its payload, as counted against ``pauseBytes``: the array's header and
    /// allocation, and its slot in the queue.
    package static let overheadPerSDU = 64

    private let state = LockedValue(State())

    /// Bytes held now, as counted against ``pauseBytes`` (tests check the bound).
    package var heldBytes: Int { state.withLock { $0.bytes } }
    /// SDUs held now.
    package var heldSDUs: Int { state.withLock { $0.sdus.count - $0.head } }
    /// Whether reading is paused for a backlog above ``pauseBytes``.
    package var isPaused: Bool { state.withLock { $0.paused } }
    private let source: UncheckedSource
    /// The serial queue the source's handler runs on; a read pass after a pause is queued there too.
    private let queue: DispatchQueue
    private let descriptor: KernelDescriptor
    private let receiveMTU: Int
    private let peer: BLEAddress

    /// Starts reading `descriptor` (connected, non-blocking) in reads of `receiveMTU` bytes, holding at most about
    /// `pauseBytes` (payload plus ``overheadPerSDU`` per SDU) that ``next()`` has not taken.
    package init(descriptor: KernelDescriptor, receiveMTU: Int, peer: BLEAddress, pauseBytes: Int = 16 << 20) {
        self.descriptor = descriptor
        self.receiveMTU = receiveMTU
        self.peer = peer
        self.pauseBytes = pauseBytes
        let queue = DispatchQueue(label: "nearby.ble.kernel-l2cap-reader")
        self.queue = queue
        source = UncheckedSource(source: DispatchSource.makeReadSource(fileDescriptor: descriptor.fd, queue: queue))
        // The handler holds the drain weakly (the channel owns it; deinit cancels the source); the cancel handler
        // holds the descriptor, whose number must stay open until the source is cancelled.
        source.source.setEventHandler { [weak self] in self?.drain() }
        source.source.setCancelHandler { [descriptor] in _ = descriptor }
        source.source.resume()
    }

    deinit {
        cancelSource()
    }

    /// The next SDU, in arrival order; `nil` once the channel ended and every SDU read before was taken (or at
    /// once after ``stop()``).
    /// - Throws: the read error that ended the channel, once the SDUs read before it were taken.
    package func next() async throws -> [UInt8]? {
        while true {
            // Suspending, resuming and cancelling the source happen under the lock, so that they stay balanced.
            let (sdu, end, resumed): ([UInt8]?, End?, Bool) = state.withLock { state in
                if !state.isEmpty {
                    let sdu = state.take()
                    if state.paused, state.bytes < pauseBytes / 2, !state.cancelled {
                        state.paused = false
                        source.source.resume()  // lock-ok: a dispatch source's resume only schedules its handler
                        return (sdu, nil, true)
                    }
                    return (sdu, nil, false)
                }
                return (nil, state.end, false)
            }
            if resumed {
                // What the kernel queued while reading was paused (and its end, if the peer closed meanwhile) is read
                // now: a resumed source is not sure to report readiness that it saw while suspended (the socket may
                // get no new data: its writer waits for this very read), which once hung a transfer for good.
                queue.async { [weak self] in self?.drain() }
            }
            if let sdu { return sdu }
            switch end {
            case .closed: return nil
            case .failed(let error): throw error
            case nil:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let ready = state.withLock { state in
                        guard state.isEmpty, state.end == nil else { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
        }
    }

    /// Stops reading and discards what was not taken; ``next()`` returns `nil`. Idempotent.
    package func stop() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.end == nil { state.end = .closed }
            state.sdus = []
            state.head = 0
            state.bytes = 0
            defer { state.waiter = nil }
            return state.waiter
        }
        cancelSource()
        waiter?.resume()
    }

    /// Reads every SDU the kernel has (on the source's queue).
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: receiveMTU)
        while true {
            if state.withLock({ $0.end != nil || $0.paused || $0.cancelled }) { return }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor.fd, $0.baseAddress, $0.count) }
            if count > 0 {
                deliver(Array(buffer[..<count]))
                continue
            }
            if count == 0 {
                finish(.closed)
                return
            }
            let code = errno
            switch code {
            case EAGAIN, EWOULDBLOCK:
                // The kernel reported the disconnection earlier and the queue is now empty: the end.
                if state.withLock({ $0.peerDisconnected }) { finish(.closed) }
                return
            case EINTR:
                continue
            case ECONNRESET, ENOTCONN, EPIPE:
                // The kernel reports the disconnection once, ahead of the SDUs still queued (`read` checks the
                // socket's error before its queue): those are the peer's last writes (a sender that closes right
                // after writing), so reading goes on until none is left.
                let again = state.withLock { state -> Bool in
                    defer { state.peerDisconnected = true }
                    return state.peerDisconnected
                }
                if again {
                    finish(.closed)
                    return
                }
            default:
                finish(.failed(KernelL2CAPSocket.failure("read from \(peer)", code)))
                return
            }
        }
    }

    private func deliver(_ sdu: [UInt8]) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.sdus.append(sdu)
            state.bytes += sdu.count + Self.overheadPerSDU
            if state.bytes > pauseBytes, !state.paused, !state.cancelled {
                state.paused = true
                source.source.suspend()
            }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    private func finish(_ end: End) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.end == nil { state.end = end }
            defer { state.waiter = nil }
            return state.waiter
        }
        cancelSource()
        waiter?.resume()
    }

    /// Cancels the source once (resuming it first when paused: a suspended source does not deliver its
    /// cancellation).
    private func cancelSource() {
        state.withLock { state in
            guard !state.cancelled else { return }
            state.cancelled = true
            if state.paused {
                state.paused = false
                source.source.resume()  // lock-ok: a dispatch source's resume only schedules its handler
            }
            source.source.cancel()  // lock-ok: a dispatch source's cancel handler runs later, on its queue
        }
    }
}
