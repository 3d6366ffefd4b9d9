import AsyncAlgorithms
import Foundation
import NearbyWire

/// A stream of bytes arriving from a peer as a STREAM payload.
///
/// Iterate it to read the bytes in order. Reading is back-pressured end to end: nothing is buffered between the
/// connection and this stream, so while nobody reads, the endpoint's channel is not read either, the socket fills
/// and the sender waits (memory stays bounded). Meanwhile our keep-alive timeout for that endpoint is suspended;
/// a sending peer may still drop the connection when its writes stall past its own write deadline (for
/// swift-nearby peers: ``ResourceLimits/writeTimeout``, by default the keep-alive timeout), so read promptly or
/// cancel the payload. Iterate it from one task only.
public struct IncomingByteStream: AsyncSequence, Sendable {
    /// A chunk of bytes.
    public typealias Element = [UInt8]
    let chunks: AsyncThrowingStream<[UInt8], any Error>

    /// Hands over the chunks sent into `channel` one by one, each when the app asks for it.
    init(channel: AsyncThrowingChannel<[UInt8], any Error>) {
        chunks = AsyncThrowingStream(unfolding: {
            // The channel takes concurrent consumers, so a fresh iterator per chunk is safe.
            var iterator = channel.makeAsyncIterator()
            return try await iterator.next()
        })
    }

    /// Makes an iterator.
    public func makeAsyncIterator() -> AsyncThrowingStream<[UInt8], any Error>.AsyncIterator {
        chunks.makeAsyncIterator()
    }
}

/// Something that happened on one endpoint.
public enum EndpointEvent: Sendable {
    /// The handshake of a new connection is done; the app must accept or reject it.
    case initiated(ConnectionInfo)
    /// Both sides accepted.
    case connected(ConnectionInfo)
    /// A bandwidth upgrade moved the connection to another medium (for example from BLE to Wi-Fi LAN).
    case mediumChanged(endpointID: String, medium: MediumKind)
    /// One side rejected the connection.
    case rejected(endpointID: String, byPeer: Bool)
    /// The connection's channel broke without a goodbye and the endpoint waits for a new one (auto-reconnect,
    /// between swift-nearby peers): payloads in flight pause. `reconnected` or `disconnected` follows.
    case reconnecting(endpointID: String, error: NearbyError)
    /// A new channel replaced the broken one: payloads in flight go on where the receiver is.
    case reconnected(endpointID: String, medium: MediumKind)
    /// The connection ended (`error` is nil for a clean goodbye from either side).
    case disconnected(endpointID: String, error: NearbyError?)
    /// A connection attempt failed before both sides decided (handshake error, timeout, protocol error).
    case connectionFailed(endpointID: String?, error: NearbyError)
    /// A complete BYTES payload arrived.
    case bytesReceived(endpointID: String, payloadID: PayloadID, bytes: [UInt8])
    /// A FILE payload started arriving; it will be at `name` (relative to the receive directory) when complete.
    case fileStarted(endpointID: String, payloadID: PayloadID, name: String, totalBytes: Int64)
    /// A FILE payload is complete and in place at `url`.
    case fileReceived(endpointID: String, payloadID: PayloadID, url: URL, name: String)
    /// A STREAM payload started; read its bytes from `stream`.
    case streamReceived(endpointID: String, payloadID: PayloadID, stream: IncomingByteStream)
    /// Progress of a payload in either direction. In-progress updates of a FILE come at most every 50 ms per
    /// payload (`TransferUpdateThrottle`), always for the first chunk; the terminal update always arrives.
    case transferUpdate(endpointID: String, update: PayloadTransferUpdate, isOutgoing: Bool)
    /// Why a payload is failing, when that is known; its `failure` update follows. Incoming: what went wrong here
    /// (a write, the free space, a limit). Outgoing: the reason the receiver gave with its PAYLOAD_ERROR.
    case payloadFailed(endpointID: String, payloadID: PayloadID, reason: NearbyError, isOutgoing: Bool)
}

