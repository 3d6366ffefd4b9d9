import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyWire

/// Makes the driver of a medium for a publication or subscription; normally ``MediumFactory``'s, replaced in tests.
package typealias MediumProvider = @Sendable (_ kind: MediumKind, _ logger: Logger) throws -> any MediumDriver

/// The entry point of Nearby Messages: publish and subscribe to small messages between nearby devices, without any
/// server, on top of Nearby Connections (see `docs/MESSAGES.md`).
///
/// ```swift
/// let manager = MessageManager(serviceID: "com.example.chat")
/// let publication = try await manager.publish(Message(text: "hello"))
/// let subscription = try await manager.subscribe()
/// for await event in subscription { print(event.kind, event.message.text ?? "") }
/// ```
///
/// Publications and subscriptions last as long as their objects (or until their TTL): release or cancel them to
/// stop.
public final class MessageManager: Sendable {
    /// Reports a problem with a radio or with consent; called whenever one is found.
    public typealias ProblemHandler = @Sendable (NearbyError) -> Void

    /// The service ID: only publications and subscriptions of the same service see each other.
    public let serviceID: String
    /// The consent store.
    public let consent: ConsentStore
    /// The logger (debug level when debug logging is on).
    public let logger: Logger

    let mediumProvider: MediumProvider
    let beaconSource: (any AdvertisingReportSource)?
    let permissionRequest: PermissionRequestHandler
    let onBluetoothProblem: ProblemHandler
    let onMDNSProblem: ProblemHandler
    let onConsentProblem: ProblemHandler
    /// The audio medium's sound I/O, status handler and timings (MessageManager+Audio.swift).
    let audio = AudioMediumSettings()
    /// The radio states and `radioStatusHandler` (RadioStateHandlers.swift).
    let radio = RadioStateMonitor()
    /// The clock of the found/lost, TTL and retry timers.
    let clock: NearbyClock
    /// The stopping of publications, subscriptions and Google-shaped handles released without being cancelled: a
    /// `deinit` starts no task, it hands its (asynchronous) stop to this scope. Never cancelled, so each stop runs to
    /// its end; once the manager and those objects are released, the scope closes itself after them.
    let releasedStops = TaskScope()
    private let grantedForThisRun = LockedValue(false)
    private let consentToken: UUID?

    /// Creates a manager.
    ///
    /// - Parameters:
    ///   - serviceID: The service both sides use (Google's "project").
    ///   - debugLogging: Logs every important internal event at debug level.
    ///   - logger: The logger; its level is set from `debugLogging`.
    ///   - consent: Where consent is persisted (default `$XDG_CONFIG_HOME/swift-nearby/consent`).
    ///   - permissionRequest: Asks for consent when it is not granted; the default asks on the terminal and denies
    ///     without one.
    ///   - bluetoothController: The Bluetooth controller BLE strategies run on; without one, BLE is reported as
    ///     unavailable (`NearbyError.Code.bluetoothUnavailable`) and Wi-Fi LAN is used alone.
    ///   - beaconSource: The BLE scanner beacons come from; `nil` when there is none (beacon subscriptions then
    ///     report a Bluetooth problem).
    ///   - onBluetoothProblem: Called when the Bluetooth controller is missing or unusable.
    ///   - onMDNSProblem: Called when mDNS (avahi-daemon) is not running, so Wi-Fi LAN discovery cannot work.
    ///   - onConsentProblem: Called when a publication or subscription is refused for lack of consent.
    ///   - onPermissionChanged: Called when the persisted consent changes.
    public convenience init(
        serviceID: String,
        debugLogging: Bool = false,
        logger: Logger = Logger(label: "nearby.messages"),
        consent: ConsentStore = ConsentStore(),
        permissionRequest: @escaping PermissionRequestHandler = terminalPermissionRequest,
        bluetoothController: BluetoothController? = nil,
        beaconSource: (any AdvertisingReportSource)? = nil,
        onBluetoothProblem: @escaping ProblemHandler = { _ in },
        onMDNSProblem: @escaping ProblemHandler = { _ in },
        onConsentProblem: @escaping ProblemHandler = { _ in },
        onPermissionChanged: (@Sendable (Bool) -> Void)? = nil
    ) {
        self.init(
            serviceID: serviceID, debugLogging: debugLogging, logger: logger, consent: consent,
            permissionRequest: permissionRequest,
            mediums: Self.factoryMediums(bluetoothController: bluetoothController),
            beaconSource: beaconSource, onBluetoothProblem: onBluetoothProblem, onMDNSProblem: onMDNSProblem,
            onConsentProblem: onConsentProblem, onPermissionChanged: onPermissionChanged)
    }

    /// The mediums the public initializer uses: those ``MediumFactory`` builds, BLE on `bluetoothController`.
    package static func factoryMediums(bluetoothController: BluetoothController?) -> MediumProvider {
        { kind, logger in
            var factory = MediumFactory(bluetoothController: bluetoothController, logger: logger)
            // Publications and subscriptions started while avahi-daemon is not running start when it does.
            factory.waitForMDNS = true
            return try factory.driver(for: kind)
        }
    }

    /// Creates a manager whose mediums come from `mediums` (test doubles) and whose timers run on `clock` (a
    /// `ManualClock` in tests); the other parameters are those of the public initializer.
    package init(
        clock: NearbyClock = .continuous,
        serviceID: String,
        debugLogging: Bool = false,
        logger: Logger = Logger(label: "nearby.messages"),
        consent: ConsentStore = ConsentStore(),
        permissionRequest: @escaping PermissionRequestHandler = terminalPermissionRequest,
        mediums: @escaping MediumProvider,
        beaconSource: (any AdvertisingReportSource)? = nil,
        onBluetoothProblem: @escaping ProblemHandler = { _ in },
        onMDNSProblem: @escaping ProblemHandler = { _ in },
        onConsentProblem: @escaping ProblemHandler = { _ in },
        onPermissionChanged: (@Sendable (Bool) -> Void)? = nil
    ) {
        self.clock = clock
        self.serviceID = serviceID
        var logger = logger
        if debugLogging { logger.logLevel = .debug }
        logger[metadataKey: "service"] = "\(serviceID)"
        self.logger = logger
        self.consent = consent
        self.permissionRequest = permissionRequest
        self.mediumProvider = mediums
        self.beaconSource = beaconSource
        self.onBluetoothProblem = onBluetoothProblem
        self.onMDNSProblem = onMDNSProblem
        self.onConsentProblem = onConsentProblem
        consentToken = onPermissionChanged.map { consent.addChangeHandler($0) }
    }

    deinit {
        if let consentToken { consent.removeChangeHandler(consentToken) }
    }

    // MARK: - Publish and subscribe

    /// Publishes `message` until the returned publication is cancelled or released, or its TTL runs out.
    ///
    /// A message whose envelope fits in 131 bytes is advertised as the endpoint info; a larger one is advertised as
    /// a descriptor and sent to each subscriber that connects to fetch it. In discovery mode `.scan` the message is
    /// also delivered to subscriptions that broadcast their interest (``PublishOptions/discoveryMode``).
    /// - Throws: `NearbyError`: `NearbyError.Code.messageTooLarge` over 102,400 bytes,
    ///   `NearbyError.Code.invalidMessageLabel` for `*` in the namespace or type,
    ///   `NearbyError.Code.consentNotGranted`, `.invalidArgument` for an empty discovery mode (or plain endpoint
    ///   info without broadcast), `.mediumUnavailable` / `NearbyError.Code.bluetoothUnavailable` when no medium
    ///   can advertise or discover.
    public func publish(_ message: Message, options: PublishOptions = PublishOptions()) async throws -> Publication {
        try message.validate()
        if options.plainEndpointInfo {
            guard message.namespace.isEmpty, message.type.isEmpty, (1...131).contains(message.content.count) else {
                throw NearbyError(
                    .invalidArgument,
                    "plain endpoint info needs 1 to 131 bytes of content in the default namespace and type")
            }
        }
        try Self.checkMode(options.strategy.mode, plain: options.plainEndpointInfo)
        try validateAudio(options)
        try await ensureConsent()
        let connections = try makeConnectionManager(options.strategy.mediums, purpose: "publish")
        return try await Publication.start(message, options: options, connections: connections, owner: self)
    }

    /// Subscribes to messages (and, with ``DeviceTypes/bleBeacons``, beacons) until the returned subscription is
    /// cancelled or released, or its TTL runs out. Found and lost are delivered to `onFound` / `onLost` and to
    /// every iterator of the subscription.
    /// In discovery mode `.broadcast` the subscription advertises its interest and takes the messages publications
    /// in mode `.scan` deliver (``SubscribeOptions/discoveryMode``).
    /// - Throws: `NearbyError`: `NearbyError.Code.consentNotGranted`, `.invalidArgument` for an
    ///   empty discovery mode, `NearbyError.Code.bluetoothUnavailable` / `.mediumUnavailable` when
    ///   nothing can be discovered with.
    public func subscribe(
        options: SubscribeOptions = SubscribeOptions(), onFound: (@Sendable (Message) -> Void)? = nil,
        onLost: (@Sendable (Message) -> Void)? = nil
    ) async throws -> Subscription {
        try Self.checkMode(options.strategy.mode, plain: false)
        try await ensureConsent()
        let subscription = Subscription(options: options, owner: self, onFound: onFound, onLost: onLost)
        var started = false
        subscription.startAudioScanIfAudioOnly(self)
        if options.deviceTypes.contains(.nearbyDevices) {
            do {
                let connections = try makeConnectionManager(options.strategy.mediums, purpose: "subscribe")
                try await subscription.startDiscovery(connections, mode: options.strategy.mode)
                started = true
            } catch let error as NearbyError where options.deviceTypes.contains(.bleBeacons) {
                logger.warning("cannot discover nearby devices", metadata: ["error": "\(error)"])
            }
        }
        if options.deviceTypes.contains(.bleBeacons) {
            if let beaconSource {
                subscription.startBeaconScan(beaconSource)
                started = true
            } else {
                let error = NearbyError(
                    .bluetoothUnavailable, "BLE scanning not available: no Bluetooth controller (HCI transport) is configured")
                onBluetoothProblem(error)
                if !started { throw error }
            }
        }
        guard started else { throw NearbyError(.invalidArgument, "a subscription needs at least one device type") }
        subscription.startTimers()
        return subscription
    }

    // MARK: - Consent

    /// Whether this process may discover: persisted consent, or consent given for this run.
    public var isConsentGranted: Bool {
        grantedForThisRun.withLock { $0 } || consent.isGranted
    }

    func ensureConsent() async throws {
        if isConsentGranted { return }
        logger.debug("asking for consent")
        switch await permissionRequest() {
        case .grant:
            try consent.setGranted(true)
        case .grantForThisRun:
            grantedForThisRun.withLock { $0 = true }
        case .deny:
            let error = NearbyError(.consentNotGranted, "the user has not consented to nearby discovery")
            onConsentProblem(error)
            throw error
        }
    }

    // MARK: - Mediums

    /// A Connections manager with the mediums of `wanted` that can be made; reports the others.
    func makeConnectionManager(_ wanted: MessageStrategy.Mediums, purpose: String) throws -> ConnectionManager {
        var mediums: [any MediumDriver] = []
        var failures: [NearbyError] = []
        for kind in wanted.transportKinds {
            do {
                mediums.append(try mediumProvider(kind, logger))
                if kind == .wifiLAN { radio.watchMDNS(logger: logger) }
            } catch {
                let nearby = (error as? NearbyError) ?? NearbyError(.mediumUnavailable, "\(kind) unavailable", cause: error)
                failures.append(nearby)
                report(nearby, medium: kind)
            }
        }
        guard !mediums.isEmpty else {
            throw failures.first ?? NearbyError(.invalidArgument, "the strategy names no medium")
        }
        let directory = FileManager.default.temporaryDirectory
        let options = ConnectionOptions(drivers: mediums, receiveDirectory: directory, logger: logger)
        logger.debug("\(purpose) over \(mediums.map { "\($0.kind)" })")
        let manager = ConnectionManager(serviceID: serviceID, strategy: .pointToPoint, options: options)
        manager.bluetoothStatusHandler = { [radio, onBluetoothProblem] status in
            if let error = status.error { onBluetoothProblem(error) }
            radio.bluetooth(status)
        }
        return manager
    }

    /// Sends a medium problem to the right handler.
    func report(_ error: NearbyError, medium: MediumKind) {
        logger.warning("medium problem", metadata: ["medium": "\(medium)", "error": "\(error)"])
        switch medium {
        case .ble: onBluetoothProblem(error)
        case .wifiLAN: onMDNSProblem(error)
        }
        radio.problem(RadioStatus.Radio(medium), error)
    }
}
