import Foundation
import NearbyCore
import NearbyWire

/// A 4-character endpoint identifier.
public typealias EndpointID = String

/// The one error type of swift-nearby.
public typealias NearbyError = NearbyWire.NearbyError

/// How endpoints may connect: `.pointToPoint` (1-to-1), `.star` (1-to-N) or `.cluster` (M-to-N).
public typealias Strategy = NearbyCore.Strategy

/// Payload identifiers, random in (0, Int64.max].
public typealias PayloadID = NearbyCore.PayloadID

/// A medium to advertise, discover or connect over, as Google's API names them. swift-nearby implements `.wifiLAN`
/// and `.ble`; the others are accepted and ignored.
///
/// Events and advertising sessions report the medium in use as a ``MediumKind`` (`wifi-lan`, `ble`): only the
/// mediums that exist here.
public enum Medium: Sendable, Hashable, CaseIterable {
    /// Bluetooth classic (not implemented on Linux; ignored).
    case bluetooth
    /// Bluetooth Low Energy.
    case ble
    /// WebRTC (not implemented; ignored).
    case webRTC
    /// Wi-Fi LAN: DNS-SD and TCP.
    case wifiLAN
    /// Wi-Fi hotspot (not implemented; ignored).
    case wifiHotspot
    /// Wi-Fi Direct (not implemented; ignored).
    case wifiDirect
    /// Apple Wireless Direct Link (not implemented; ignored).
    case awdl

    /// The engine's name for this medium, for the two swift-nearby implements.
    package var kind: MediumKind? {
        switch self {
        case .ble: .ble
        case .wifiLAN: .wifiLAN
        default: nil
        }
    }

    /// The medium the engine calls `kind`.
    package init(_ kind: MediumKind) {
        switch kind {
        case .ble: self = .ble
        case .wifiLAN: self = .wifiLAN
        }
    }
}

/// Where a connection stands.
public enum ConnectionState: Sendable, Hashable {
    /// The handshake is done and decisions are pending.
    case connecting
    /// Both sides accepted.
    case connected
    /// The connection ended.
    case disconnected
    /// One side rejected the connection.
    case rejected
}

/// Progress of a payload, as Google's API reports it.
public enum TransferUpdate: Sendable, Hashable {
    /// Every byte went through.
    case success
    /// One side cancelled.
    case canceled
    /// The transfer broke.
    case failure
    /// Bytes are moving: `completed` of `total` (total is −1 for streams). For a file it comes at most every 50 ms
    /// (as Google's engine reports it), always for the first chunk; the outcome always follows.
    case progress(completed: Int64, total: Int64)
}

/// The two strings people compare to verify a connection.
public struct VerificationCode: Sendable, Hashable {
    /// The 4-digit code Android shows.
    public var digits: String
    /// The 5-character token Google's Swift API shows.
    public var token: String
}

/// Everything the async event stream of a ``ConnectionManager`` reports.
public enum ConnectionEvent: Sendable {
    /// Discovery found an endpoint advertising `context` (its endpoint info).
    case endpointFound(EndpointID, context: Data, medium: MediumKind)
    /// A discovered endpoint is gone.
    case endpointLost(EndpointID)
    /// Discovery on a medium failed.
    case discoveryFailed(MediumKind, NearbyError)
    /// A connection's handshake is done: accept or reject it with ``ConnectionManager/accept(_:)`` /
    /// ``ConnectionManager/reject(_:)`` (unless delegates decide).
    case connectionRequested(EndpointID, context: Data, code: VerificationCode, isIncoming: Bool)
    /// A connection changed state.
    case stateChanged(EndpointID, ConnectionState, error: NearbyError?)
    /// A bandwidth upgrade moved a connection to another medium (from BLE to Wi-Fi LAN). Payloads in flight
    /// carry on over the new medium.
    case mediumChanged(EndpointID, medium: MediumKind)
    /// A connection's link broke without a goodbye and swift-nearby seeks a new one (auto-reconnect, only with
    /// swift-nearby peers; ``ConnectionOptions/autoReconnectWindow``). Payloads in flight pause; ``reconnected(_:medium:)``
    /// follows, or ``stateChanged(_:_:error:)`` to `.disconnected` once the window passed.
    case reconnecting(EndpointID, error: NearbyError)
    /// A new channel replaced the broken one, checked to belong to the same connection; payloads in flight go on
    /// where the receiver is (files and streams from its next chunk, bytes whole).
    case reconnected(EndpointID, medium: MediumKind)
    /// A BYTES payload arrived.
    case bytesReceived(EndpointID, PayloadID, Data)
    /// A FILE payload started arriving; it will be named `name` under the receive directory.
    case fileStarted(EndpointID, PayloadID, name: String, totalBytes: Int64)
    /// A FILE payload is complete at `url`.
    case fileReceived(EndpointID, PayloadID, url: URL, name: String)
    /// A STREAM payload started; read it from `stream`.
    case streamReceived(EndpointID, PayloadID, IncomingByteStream)
    /// Progress of a payload in either direction: `bytes` of `total` (−1 for streams) moved so far.
    case transferUpdate(
        EndpointID, PayloadID, TransferUpdate, kind: PayloadKind, isOutgoing: Bool, bytes: Int64, total: Int64)
    /// Why a payload is failing, when that is known; its `.transferUpdate` with `.failure` follows. Incoming: what
    /// went wrong on this side (a write, the free space, a limit). Outgoing: the reason a swift-nearby receiver
    /// gave with its PAYLOAD_ERROR (other implementations give none, and then this event does not come).
    case payloadFailed(EndpointID, PayloadID, reason: NearbyError, isOutgoing: Bool)
}

/// The bytes of an incoming STREAM payload, as an `AsyncSequence` of chunks.
public typealias IncomingByteStream = NearbyCore.IncomingByteStream

/// The kind of a payload: bytes, file or stream.
public typealias PayloadKind = NearbyCore.PayloadKind

/// A medium as the engine names it (`wifi-lan`, `ble`).
public typealias MediumKind = NearbyCore.MediumKind

/// Limits on what peers can make this process hold (bytes, payloads, endpoints, time); see ``ConnectionOptions/limits``.
public typealias ResourceLimits = NearbyCore.ResourceLimits
