import NearbyWire

/// The upgrade path a medium offers in a bandwidth upgrade (`UPGRADE_PATH_AVAILABLE.upgrade_path_info`).
public typealias UpgradePathInfo = ProtoBandwidthUpgradeNegotiationFrame.UpgradePathInfo

/// A listener a medium opened for the new channel of one bandwidth upgrade.
public protocol UpgradeListener: Sendable {
    /// The medium the new channel will run over.
    var medium: MediumKind { get }
    /// What to offer the peer: the medium and how to reach this listener.
    var pathInfo: UpgradePathInfo { get }
    /// Stops listening. Channels already accepted stay open. Idempotent.
    func stop() async
}

extension MediumDriver {
    /// Mediums are not upgrade targets unless they say so.
    public var supportsUpgradeListening: Bool { false }

    /// Mediums are not upgrade targets unless they say so: this default throws `.mediumUnavailable`.
    public func startUpgradeListener(
        onIncoming: @escaping @Sendable (any EndpointChannel) -> Void
    ) async throws -> any UpgradeListener {
        throw NearbyError(.mediumUnavailable, "\(kind) cannot be the target of a bandwidth upgrade")
    }

    /// Mediums are not upgrade targets unless they say so: this default throws `.mediumUnavailable`.
    public func connectForUpgrade(to path: UpgradePathInfo) async throws -> any EndpointChannel {
        throw NearbyError(.mediumUnavailable, "\(kind) cannot be the target of a bandwidth upgrade")
    }
}

extension MediumKind {
    /// The medium of an upgrade path or a connection request's list, when swift-nearby implements it.
    public init?(upgradePath medium: UpgradePathInfo.Medium) {
        switch medium {
        case .wifiLan: self = .wifiLAN
        case .ble: self = .ble
        default: return nil
        }
    }

    /// The medium of a connection request's `mediums` entry, when swift-nearby implements it.
    public init?(connectionRequest medium: ProtoConnectionRequestFrame.Medium) {
        switch medium {
        case .wifiLan: self = .wifiLAN
        case .ble, .bleL2Cap: self = .ble
        default: return nil
        }
    }
}
