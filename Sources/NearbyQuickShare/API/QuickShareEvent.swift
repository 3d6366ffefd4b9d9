import Foundation
import NearbyConnections
import NearbyCore
import NearbyWire

/// A Quick Share device: a receiver found by discovery, or the peer of a connection.
public struct QuickShareDevice: Sendable, Hashable {
    /// Its Nearby Connections endpoint ID (4 characters), which names it in every call and event.
    public var endpointID: String
    /// The name it shows to everyone, or nil for a device visible to its contacts only (which cannot be reached
    /// without Google account certificates).
    public var name: String?
    /// Its kind.
    public var deviceType: QuickShareDeviceType
    /// Its vendor ID (1 = Samsung), if it sent one.
    public var vendorID: UInt8?

    /// Creates a device description.
    public init(endpointID: String, name: String?, deviceType: QuickShareDeviceType, vendorID: UInt8? = nil) {
        self.endpointID = endpointID
        self.name = name
        self.deviceType = deviceType
        self.vendorID = vendorID
    }

    /// The device described by endpoint info `bytes`; nil when they are not Quick Share endpoint info.
    init?(endpointID: String, endpointInfo bytes: [UInt8]) {
        guard let info = try? QuickShareEndpointInfo(decoding: bytes) else { return nil }
        self.init(endpointID: endpointID, name: info.deviceName, deviceType: info.deviceType, vendorID: info.vendorID)
    }
}

/// A share a sender offers to this receiver: who, the PIN both screens show, and what.
public struct QuickShareIncomingShare: Sendable, Hashable {
    /// The sending device.
    public var sender: QuickShareDevice
    /// The 4-digit PIN; the sender's screen shows the same digits.
    public var pin: String
    /// What it wants to send.
    public var offer: QuickShareOffer
}

/// How a share ended.
public enum QuickShareResult: Sendable, CustomStringConvertible {
    /// Everything arrived (receiver), or was sent (sender). A sender says `confirmed` when the receiver then
    /// hung up, which it does once it has everything; false when it stayed connected past 60 s.
    case completed(confirmed: Bool)
    /// The receiving user rejected the share (on the receiver: we rejected it).
    case rejected
    /// The receiver refused the share without asking its user: not enough space, an attachment it does not
    /// support, or one that breaks its limits. `reason` says why when the refusal was ours.
    case refused(status: QuickShareResponseStatus, reason: String?)
    /// One side cancelled.
    case canceled(byPeer: Bool)
    /// The connection or the protocol failed, or a deadline passed.
    case failed(NearbyError)

    /// A short, readable account.
    public var description: String {
        switch self {
        case .completed(let confirmed): confirmed ? "completed" : "completed (the receiver did not confirm)"
        case .rejected: "rejected"
        case .refused(let status, let reason): "refused (\(status))" + (reason.map { ": \($0)" } ?? "")
        case .canceled(let byPeer): byPeer ? "canceled by the peer" : "canceled"
        case .failed(let error): "failed: \(error.message)"
        }
    }

    /// The result's name in the CLI's JSON (`completed`, `rejected`, `refused`, `canceled`, `failed`).
    public var name: String {
        switch self {
        case .completed: "completed"
        case .rejected: "rejected"
        case .refused: "refused"
        case .canceled: "canceled"
        case .failed: "failed"
        }
    }
}

/// A receiver's answer to an introduction, as the RESPONSE frame carries it.
public enum QuickShareResponseStatus: String, Sendable, Hashable, CustomStringConvertible {
    /// Accepted.
    case accept
    /// Rejected by the user.
    case reject
    /// Not enough space on the receiver.
    case notEnoughSpace = "not_enough_space"
    /// An attachment the receiver does not support (or that breaks its limits).
    case unsupportedAttachmentType = "unsupported_attachment_type"
    /// Nobody answered in time.
    case timedOut = "timed_out"
    /// A status this version does not know.
    case unknown

    init(_ status: ProtoSharingResponse.Status) {
        switch status {
        case .accept: self = .accept
        case .reject: self = .reject
        case .notEnoughSpace: self = .notEnoughSpace
        case .unsupportedAttachmentType: self = .unsupportedAttachmentType
        case .timedOut: self = .timedOut
        default: self = .unknown
        }
    }

    /// The snake_case name.
    public var description: String { rawValue }
}

/// Everything a ``QuickShareReceiver`` or ``QuickShareSender`` reports, in order.
public enum QuickShareEvent: Sendable {
    /// Sender: discovery found a receiver.
    case deviceFound(QuickShareDevice)
    /// Sender: a receiver found earlier is gone.
    case deviceLost(endpointID: String)
    /// A connection with a peer is up: compare the PIN with the one on its screen.
    case connected(QuickShareDevice, pin: String)
    /// Receiver: a sender offers a share; accept or reject it (``QuickShareReceiver/accept(_:)``), unless the
    /// delegate decides.
    case offerReceived(QuickShareIncomingShare)
    /// Sender: the receiver accepted; the attachments are on their way.
    case accepted(endpointID: String)
    /// Bytes of the share moved: `bytes` of `totalBytes` (files, texts and Wi-Fi passwords together).
    case progress(endpointID: String, bytes: Int64, totalBytes: Int64)
    /// Receiver: a file is complete at `url` (under the receive directory, never partial under that name).
    case fileReceived(endpointID: String, QuickShareFile, url: URL)
    /// Receiver: a text arrived.
    case textReceived(endpointID: String, QuickShareText, text: String)
    /// Receiver: Wi-Fi credentials arrived (shown, never applied).
    case wifiCredentialsReceived(endpointID: String, QuickShareWifiCredentials)
    /// The share with this peer ended.
    case finished(endpointID: String, QuickShareResult)
}

/// Gives each `events` access its own stream of the same events (the newest 65,536 kept per stream).
final class QuickShareEventFanOut: Sendable {
    private let subscribers = LockedValue<[UUID: AsyncStream<QuickShareEvent>.Continuation]>([:])

    /// A new stream of every event from now on.
    func subscribe() -> AsyncStream<QuickShareEvent> {
        let (stream, continuation) = AsyncStream<QuickShareEvent>.makeStream(bufferingPolicy: .bufferingNewest(65_536))
        let key = UUID()
        subscribers.withLock { $0[key] = continuation }
        continuation.onTermination = { [subscribers] _ in
            _ = subscribers.withLock { $0.removeValue(forKey: key) }
        }
        return stream
    }

    /// Sends `event` to every stream (outside the lock).
    func yield(_ event: QuickShareEvent) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(event) }
    }

    /// Ends every stream.
    func finish() {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
