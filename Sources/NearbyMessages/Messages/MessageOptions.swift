import Foundation
import NearbyCore

/// How nearby devices discover each other: which mediums, and whether this side broadcasts, scans or both.
public struct MessageStrategy: Sendable, Hashable {
    /// The discovery mediums.
    public struct Mediums: OptionSet, Sendable, Hashable {
        /// The raw bits.
        public let rawValue: Int
        /// Creates a set from its bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Bluetooth Low Energy.
        public static let ble = Mediums(rawValue: 1 << 1)
        /// Wi-Fi LAN (DNS-SD and TCP).
        public static let wifiLAN = Mediums(rawValue: 1 << 2)
        /// Every medium.
        public static let all: Mediums = [.ble, .wifiLAN]

        var kinds: [MediumKind] {
            (contains(.wifiLAN) ? [MediumKind.wifiLAN] : []) + (contains(.ble) ? [MediumKind.ble] : [])
        }
    }

    /// Broadcast, scan, or both: Google's discovery mode (`GNSDiscoveryMode`, `Strategy.DISCOVERY_MODE_*`).
    ///
    /// Two sides find each other when one broadcasts and the other scans. A publication that broadcasts advertises
    /// its message; one that scans finds subscriptions that broadcast their interest and delivers the message to
    /// them. A subscription that scans finds advertised messages; one that broadcasts advertises its interest and
    /// takes deliveries. See `docs/MESSAGES-DISCOVERY-MODES.md`.
    public struct Mode: OptionSet, Sendable, Hashable {
        /// The raw bits (Google's values: broadcast 1, scan 2).
        public let rawValue: Int
        /// Creates a mode from its bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Be discoverable: a publication advertises its message, a subscription advertises its interest.
        public static let broadcast = Mode(rawValue: 1 << 0)
        /// Discover: a subscription looks for advertised messages, a publication looks for interested subscriptions.
        public static let scan = Mode(rawValue: 1 << 1)
        /// Both (the default).
        public static let both: Mode = [.broadcast, .scan]
    }

    /// The mediums; default all. Mediums this build or machine cannot use are reported through the manager's
    /// handlers and skipped.
    public var mediums: Mediums
    /// The discovery mode; default both. It must not be empty.
    public var mode: Mode

    /// Creates a strategy.
    public init(mediums: Mediums = .all, mode: Mode = .both) {
        self.mediums = mediums
        self.mode = mode
    }

    /// All mediums, both modes.
    public static let `default` = MessageStrategy()
}

/// What a subscription discovers.
public struct DeviceTypes: OptionSet, Sendable, Hashable {
    /// The raw bits (Google's values).
    public let rawValue: Int
    /// Creates a set from its bits.
    public init(rawValue: Int) { self.rawValue = rawValue }
    /// Other devices publishing with swift-nearby or Nearby Connections (the default).
    public static let nearbyDevices = DeviceTypes(rawValue: 1 << 0)
    /// BLE beacons (Eddystone, iBeacon, AltBeacon).
    public static let bleBeacons = DeviceTypes(rawValue: 1 << 1)
}

/// How beacons are scanned for.
public struct BeaconStrategy: Sendable, Hashable {
    /// Whether iBeacons (and AltBeacons) are reported; default true.
    public var includeIBeacons: Bool
    /// Whether a low scan duty cycle is preferred (slower discovery, less power); default true. It applies only
    /// when iBeacons are not included, as in Google's API.
    public var lowPowerPreferred: Bool
    /// How long a beacon may go unseen before it is lost; default 10 s.
    public var lostAfter: Duration

    /// Creates a strategy.
    public init(includeIBeacons: Bool = true, lowPowerPreferred: Bool = true, lostAfter: Duration = .seconds(10)) {
        self.includeIBeacons = includeIBeacons
        self.lowPowerPreferred = lowPowerPreferred
        self.lostAfter = lostAfter
    }

    /// The scan settings this strategy asks of the scanner.
    public var scanSettings: BeaconScanSettings {
        BeaconScanSettings(lowDutyCycle: lowPowerPreferred && !includeIBeacons)
    }

    /// Whether frames of this kind are reported.
    public func includes(_ frame: BeaconFrame) -> Bool {
        switch frame {
        case .iBeacon, .altBeacon: includeIBeacons
        default: true
        }
    }
}

/// Options of a publication.
public struct PublishOptions: Sendable {
    /// The discovery strategy; default all mediums, both modes.
    public var strategy: MessageStrategy
    /// How long the publication lasts; default 300 s. `nil` publishes until cancelled.
    public var ttl: Duration?
    /// Called once when the TTL runs out and the publication stops.
    public var onExpired: (@Sendable () -> Void)?
    /// Advertise the content itself as the endpoint info, without the envelope, as apps following Google's
    /// migration guide do; default false. Only for content of 1 to 131 bytes in the default namespace and type.
    public var plainEndpointInfo: Bool

    /// Creates options.
    public init(
        strategy: MessageStrategy = .default, ttl: Duration? = .seconds(300), onExpired: (@Sendable () -> Void)? = nil,
        plainEndpointInfo: Bool = false
    ) {
        self.strategy = strategy
        self.ttl = ttl
        self.onExpired = onExpired
        self.plainEndpointInfo = plainEndpointInfo
    }

    /// The discovery mode, `strategy.mode`: `.broadcast` advertises the message, `.scan` delivers it to
    /// subscriptions that broadcast their interest; default both.
    public var discoveryMode: MessageStrategy.Mode {
        get { strategy.mode }
        set { strategy.mode = newValue }
    }

    /// Time between two deliveries to one interested subscription, in `.scan` mode.
    package var redeliveryInterval: Duration = .seconds(5)
}

/// Options of a subscription.
public struct SubscribeOptions: Sendable {
    /// The discovery strategy for nearby devices; default all mediums, both modes.
    public var strategy: MessageStrategy
    /// How beacons are scanned for, when ``deviceTypes`` includes ``DeviceTypes/bleBeacons``.
    public var beaconStrategy: BeaconStrategy
    /// What to discover; default ``DeviceTypes/nearbyDevices``.
    public var deviceTypes: DeviceTypes
    /// Which messages to report; default every message.
    public var filter: MessageFilter
    /// How long the subscription lasts; default 300 s. `nil` subscribes until cancelled.
    public var ttl: Duration?
    /// How long a message stays found after its publisher stopped advertising (or went out of range); default 0.
    public var lostAfter: Duration
    /// Called once when the TTL runs out and the subscription stops.
    public var onExpired: (@Sendable () -> Void)?
    /// Deliver endpoint info that is not an envelope as a message of the default namespace and type (how apps
    /// following Google's migration guide publish); default false, such endpoints are ignored.
    public var includePlainEndpointInfo: Bool

    /// Creates options.
    public init(
        strategy: MessageStrategy = .default, beaconStrategy: BeaconStrategy = BeaconStrategy(),
        deviceTypes: DeviceTypes = .nearbyDevices, filter: MessageFilter = MessageFilter(),
        ttl: Duration? = .seconds(300), lostAfter: Duration = .zero, onExpired: (@Sendable () -> Void)? = nil,
        includePlainEndpointInfo: Bool = false
    ) {
        self.includePlainEndpointInfo = includePlainEndpointInfo
        self.strategy = strategy
        self.beaconStrategy = beaconStrategy
        self.deviceTypes = deviceTypes
        self.filter = filter
        self.ttl = ttl
        self.lostAfter = lostAfter
        self.onExpired = onExpired
    }

    /// The discovery mode, `strategy.mode`: `.scan` finds advertised messages, `.broadcast` advertises this
    /// subscription's interest so that publications that scan deliver to it; default both.
    public var discoveryMode: MessageStrategy.Mode {
        get { strategy.mode }
        set { strategy.mode = newValue }
    }

    /// How many messages, publishers and beacons the subscription holds at most (``SubscriptionLimits``).
    public var limits = SubscriptionLimits()

    /// How long a delivered message stays found without a new delivery (publications deliver again every 5 s).
    package var deliveryLifetime: Duration = .seconds(15)
}
