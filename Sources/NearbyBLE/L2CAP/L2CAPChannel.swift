import NearbyWire

/// An open L2CAP LE credit-based channel: SDUs out and in, with credit-based flow control.
///
/// ``send(_:)`` suspends while the peer grants no credits, so a writer never runs ahead of the peer and memory
/// stays bounded by one SDU per writer. Credits are given back to the peer as ``receive()`` consumes SDUs, so a
/// slow reader slows the peer down instead of growing a buffer.
package final class L2CAPChannel: Sendable {
    /// The host that owns the channel.
    package let host: BLEHost
    /// The LE connection handle.
    package let handle: UInt16
    /// Our channel ID.
    package let localCID: UInt16
    /// The peer's channel ID.
    package let remoteCID: UInt16
    /// The peer's address.
    package let peer: BLEAddress
    /// The largest SDU the peer accepts.
    package let peerMTU: Int
    /// The largest K-frame payload the peer accepts.
    package let peerMPS: Int

    init(host: BLEHost, handle: UInt16, localCID: UInt16, remoteCID: UInt16, peer: BLEAddress, peerMTU: Int, peerMPS: Int) {
        self.host = host
        self.handle = handle
        self.localCID = localCID
        self.remoteCID = remoteCID
        self.peer = peer
        self.peerMTU = peerMTU
        self.peerMPS = peerMPS
    }

    var key: L2CAPChannelKey { L2CAPChannelKey(handle: handle, localCID: localCID) }

    /// Sends one SDU (at most ``peerMTU`` bytes), segmented into K-frames of at most ``peerMPS`` bytes. Suspends
    /// until every K-frame has been handed to the controller, waiting for credits as needed.
    /// - Throws: `.endpointIoError` when the channel or the connection closed, `.invalidArgument` for an SDU above
    ///   the peer's MTU.
    package func send(_ sdu: [UInt8]) async throws {
        try await host.sendSDU(key, sdu)
    }

    /// Receives the next SDU; `nil` once the channel closed cleanly.
    /// - Throws: the error that closed the channel (connection lost, protocol violation).
    package func receive() async throws -> [UInt8]? {
        try await host.receiveSDU(key)
    }

    /// The credits the peer currently grants us (diagnostics and tests).
    package func availableCredits() async -> Int? {
        await host.peerCredits(key)
    }

    /// Closes the channel with an L2CAP disconnection request. When `disconnectLink` is set and this side is the
    /// central, the LE connection is disconnected too once no channel uses it. Idempotent.
    package func close(disconnectLink: Bool = true) async {
        await host.closeChannel(key, disconnectLink: disconnectLink)
    }
}
