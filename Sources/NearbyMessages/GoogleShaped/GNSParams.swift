import Foundation
import NearbyConnections

/// Google's `GNSOperationStatus`: whether a publication or subscription runs.
public enum GNSOperationStatus: Int, Sendable, Hashable {
    /// Not running (not started yet, failed, or stopped).
    case inactive = 0
    /// Starting (asking for consent, opening the mediums).
    case starting = 1
    /// Running.
    case active = 2
}

/// Google's `GNSErrorStateHandler`: `true` while the problem lasts, `false` once it has cleared.
public typealias GNSErrorStateHandler = @Sendable (_ hasError: Bool) -> Void
/// Google's `GNSOperationStatusHandler`.
public typealias GNSOperationStatusHandler = @Sendable (GNSOperationStatus) -> Void
/// Google's `GNSPermissionHandler`: the user's answer, or the new consent state.
public typealias GNSPermissionHandler = @Sendable (_ granted: Bool) -> Void
/// Google's `GNSPermissionRequestHandler`: ask the user, then call the handler with the answer. It replaces the
/// manager's own consent request.
public typealias GNSPermissionRequestHandler = @Sendable (_ permissionHandler: @escaping GNSPermissionHandler) -> Void

/// Google's `GNSMessageManagerParams`, set in the `paramsBlock` of `GNSMessageManager`.
public final class GNSMessageManagerParams: @unchecked Sendable {
    /// Called when the audio medium cannot use the microphone (permission denied, no source, source busy, no sound
    /// server), and with `false` when it records again. Google's handler is for the permission alone; on Linux the
    /// sound server often cannot tell a denied permission from a missing source, so every microphone problem counts
    /// (`MessageManager.audioStatusHandler` has the detail).
    public var microphonePermissionErrorHandler: GNSErrorStateHandler?
    /// Called when Bluetooth is off or missing, and with `false` when that has cleared.
    public var bluetoothPowerErrorHandler: GNSErrorStateHandler?
    /// Called when this process may not use Bluetooth, and with `false` when that has cleared.
    public var bluetoothPermissionErrorHandler: GNSErrorStateHandler?
    /// Called when mDNS (avahi-daemon, needed by Wi-Fi LAN) is not running, and with `false` once it runs again.
    /// Not in Google's API, which has no Wi-Fi LAN medium.
    public var mdnsErrorHandler: GNSErrorStateHandler?
    /// The Bluetooth controller for BLE (`tcp:HOST:PORT`, `uart:/dev/ttyX[@BAUD]`, `hci:N`); `nil`: Wi-Fi LAN only.
    public var bluetoothController: BluetoothController?
    /// Where consent is kept; default `ConsentStore()`.
    public var consent = ConsentStore()
    /// Logs every important internal event at debug level (Google's `+setDebugLoggingEnabled:`).
    public var debugLogging = false

    init() {}
}

/// Google's `GNSPublicationParams`, set in the `paramsBlock` of `GNSMessageManager.publication(with:paramsBlock:)`.
public final class GNSPublicationParams: @unchecked Sendable {
    /// The strategy (mediums and discovery mode); default all mediums, both modes.
    public var strategy = MessageStrategy.default
    /// The discovery mode (Google sets it on the strategy): `strategy.mode`.
    public var discoveryMode: MessageStrategy.Mode {
        get { strategy.mode }
        set { strategy.mode = newValue }
    }
    /// Called as the publication starts, runs and stops.
    public var statusHandler: GNSOperationStatusHandler?
    /// Asks the user for consent instead of the manager's own request, when consent is not granted.
    public var permissionRequestHandler: GNSPermissionRequestHandler?
    /// How long the publication lasts (Google's TTL); default 300 s, `nil` until released.
    public var ttl: Duration? = .seconds(300)

    init() {}
}

/// Google's `GNSSubscriptionParams`, set in the `paramsBlock` of
/// `GNSMessageManager.subscription(messageFoundHandler:messageLostHandler:paramsBlock:)`.
public final class GNSSubscriptionParams: @unchecked Sendable {
    /// The strategy (mediums and discovery mode); default all mediums, both modes.
    public var strategy = MessageStrategy.default
    /// The discovery mode (Google sets it on the strategy): `strategy.mode`.
    public var discoveryMode: MessageStrategy.Mode {
        get { strategy.mode }
        set { strategy.mode = newValue }
    }
    /// What to discover (Google's `deviceTypesToDiscover`); default nearby devices.
    public var deviceTypesToDiscover: DeviceTypes = .nearbyDevices
    /// The namespace to report (Google's `messageNamespace`); `nil` (the default) reports every namespace.
    public var messageNamespace: String?
    /// The type to report within ``messageNamespace``; `nil` reports every type.
    public var type: String?
    /// How beacons are scanned for.
    public var beaconStrategy = BeaconStrategy()
    /// Called as the subscription starts, runs and stops.
    public var statusHandler: GNSOperationStatusHandler?
    /// Asks the user for consent instead of the manager's own request, when consent is not granted.
    public var permissionRequestHandler: GNSPermissionRequestHandler?
    /// How long the subscription lasts; default 300 s, `nil` until released.
    public var ttl: Duration? = .seconds(300)

    init() {}
}
