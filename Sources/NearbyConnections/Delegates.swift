import Foundation
import NearbyCore

/// Receives connection, payload and transfer callbacks of a ``ConnectionManager`` (Google's API shape).
/// Callbacks run on the manager's `queue`.
public protocol ConnectionManagerDelegate: AnyObject {
    /// Both sides' verification code is ready; call `verificationHandler(true)` to accept the connection.
    /// The default implementation accepts.
    func connectionManager(
        _ connectionManager: ConnectionManager, didReceive verificationCode: String, from endpointID: EndpointID,
        verificationHandler: @escaping (Bool) -> Void)
    /// A BYTES payload arrived.
    func connectionManager(
        _ connectionManager: ConnectionManager, didReceive data: Data, withID payloadID: PayloadID,
        from endpointID: EndpointID)
    /// A STREAM payload started.
    func connectionManager(
        _ connectionManager: ConnectionManager, didReceive stream: IncomingByteStream, withID payloadID: PayloadID,
        from endpointID: EndpointID, cancellationToken token: CancellationToken)
    /// A FILE payload started arriving; it will be at `localURL` when complete.
    func connectionManager(
        _ connectionManager: ConnectionManager, didStartReceivingResourceWithID payloadID: PayloadID,
        from endpointID: EndpointID, at localURL: URL, withName name: String, cancellationToken token: CancellationToken)
    /// Progress of a payload.
    func connectionManager(
        _ connectionManager: ConnectionManager, didReceiveTransferUpdate update: TransferUpdate,
        from endpointID: EndpointID, forPayload payloadID: PayloadID)
    /// A connection changed state.
    func connectionManager(
        _ connectionManager: ConnectionManager, didChangeTo state: ConnectionState, for endpointID: EndpointID)
}

extension ConnectionManagerDelegate {
    /// Accepts every verification code.
    public func connectionManager(
        _ connectionManager: ConnectionManager, didReceive verificationCode: String, from endpointID: EndpointID,
        verificationHandler: @escaping (Bool) -> Void
    ) {
        verificationHandler(true)
    }
}

/// Receives incoming connection requests of an ``Advertiser``.
public protocol AdvertiserDelegate: AnyObject {
    /// A discoverer asked to connect, introducing itself with `context`; call the handler with the decision.
    func advertiser(
        _ advertiser: Advertiser, didReceiveConnectionRequestFrom endpointID: EndpointID, with context: Data,
        connectionRequestHandler: @escaping (Bool) -> Void)
}

/// Receives what a ``Discoverer`` finds.
public protocol DiscovererDelegate: AnyObject {
    /// An endpoint advertising `context` was found.
    func discoverer(_ discoverer: Discoverer, didFind endpointID: EndpointID, with context: Data)
    /// A found endpoint is gone.
    func discoverer(_ discoverer: Discoverer, didLose endpointID: EndpointID)
}
