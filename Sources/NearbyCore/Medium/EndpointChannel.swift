/// A connected, framed, bidirectional channel to one peer over one medium.
///
/// Mediums create channels; the engine reads and writes frame *bodies* (the 4-byte length prefix of
/// `LengthPrefixFraming` is the channel's business). A channel enforces the 1 MiB frame limit in both
/// directions and reports a clean end of stream as `nil` from ``readFrame()``.
public protocol EndpointChannel: AnyObject, Sendable {
    /// The medium this channel runs over.
    var medium: MediumKind { get }
    /// A description of the peer for logs, e.g. `10.0.0.2:40123`.
    var peerDescription: String { get }
    /// Reads the next frame body; `nil` when the peer closed the stream cleanly between frames.
    /// - Throws: a `NearbyError` for framing errors, I/O errors or a stream cut inside a frame.
    func readFrame() async throws -> [UInt8]?
    /// Writes one frame body. Suspends while the transport applies back-pressure.
    func writeFrame(_ body: [UInt8]) async throws
    /// Closes the channel; pending and later reads end, later writes fail. Idempotent.
    func close() async
}
