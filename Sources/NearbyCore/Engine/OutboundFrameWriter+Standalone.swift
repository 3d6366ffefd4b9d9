import NearbySecurity
import NearbyWire

// A writer used on its own, without a session around it: the benchmark's sealing stage (nearby-bench) and tests.

extension SecureContextBox {
    /// Makes a box holding `channel` (encryption on from the start), for writers used without a session
    /// (tests, the benchmark's sealing stage).
    package convenience init(channel: D2DSecureChannel) {
        self.init()
        context.withLock { $0 = channel }
    }
}

extension OutboundFrameWriter {
    /// Queues `frame` to be encrypted and written; returns once the writer took it (``enqueue(_:)``).
    package func enqueueSealed(_ frame: ProtoOfflineFrame) async {
        await enqueue(.sealed(frame))
    }
}
