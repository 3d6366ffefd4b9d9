import NearbyWire

/// What the I/O layer must do after feeding a UKEY2 state machine a message.
package enum Ukey2Action: Sendable {
    /// Send these bytes (one `Ukey2Message`, to be length-prefixed) and wait for the peer's next message.
    case send([UInt8])
    /// Send these bytes; the handshake is complete on this side.
    case sendAndComplete([UInt8], Ukey2HandshakeResult)
    /// The handshake is complete on this side; nothing to send.
    case complete(Ukey2HandshakeResult)
    /// The handshake failed. Send `alert` first when present, then close the channel.
    case fail(alert: [UInt8]?, NearbyError)
}
