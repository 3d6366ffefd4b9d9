import ArgumentParser
import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyWire

/// Options every radio subcommand takes. `--service-id`, `--medium` and `--hci` fall back on the config file
/// (``CLIConfig``), and the service ID then on ``Defaults/serviceID``.
struct CommonOptions: ParsableArguments {
    @Option(
        name: .customLong("service-id"),
        help: ArgumentHelp(
            "The service ID both sides use (default: \(Defaults.serviceID)).", valueName: "service-id"))
    var serviceIDOption: String?

    @Option(
        name: .customLong("medium"),
        help: ArgumentHelp(
            "A medium to use (repeatable; default: all available; audio: publish and subscribe only).",
            valueName: "medium"))
    var mediumOptions: [CLIMedium] = []

    @Option(
        name: .customLong("hci"),
        help: ArgumentHelp(
            "BLE radio: a controller for our own host (tcp:HOST:PORT, uart:/dev/ttyX[@BAUD], hci:N) or bluez[:hciN] (default: the system's BlueZ when bluetoothd runs, else no BLE).",
            valueName: "hci"))
    var hciOption: String?

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @Flag(help: "Print the debug log on stderr.")
    var verbose = false

    @Option(name: .customLong("keep-alive-interval-ms"), help: .hidden)
    var keepAliveIntervalMillis: Int?

    @Option(name: .customLong("keep-alive-timeout-ms"), help: .hidden)
    var keepAliveTimeoutMillis: Int?

    func validate() throws {
        _ = try CLIConfig.current()
        _ = try configuredMediums()
    }

    /// The service ID: `--service-id`, else the config file's, else ``Defaults/serviceID``.
    var serviceID: String {
        serviceIDOption ?? (try? CLIConfig.current().string("service-id", command: CLIConfig.command)) ?? Defaults.serviceID
    }

    /// `--medium`, else the config file's `medium`.
    var mediums: [CLIMedium] {
        guard mediumOptions.isEmpty else { return mediumOptions }
        return (try? configuredMediums()) ?? []
    }

    /// `--hci`, else the config file's `hci`.
    var hci: String? {
        hciOption ?? (try? CLIConfig.current().string("hci", command: CLIConfig.command))
    }

    private func configuredMediums() throws -> [CLIMedium] {
        guard mediumOptions.isEmpty, let names = try CLIConfig.current().strings("medium", command: CLIConfig.command)
        else { return mediumOptions }
        return try names.map { name in
            guard let medium = CLIMedium(rawValue: name) else {
                throw ValidationError("the config file's medium \(name) is not one of wifi-lan, ble, audio")
            }
            return medium
        }
    }

    /// The Connections mediums of `--medium` (audio is not one).
    var connectionMediums: [MediumKind] { mediums.compactMap(\.kind) }

    var keepAlive: KeepAliveSettings {
        guard let interval = keepAliveIntervalMillis, let timeout = keepAliveTimeoutMillis else { return .default }
        return KeepAliveSettings(interval: .milliseconds(interval), timeout: .milliseconds(timeout))
    }

    /// The log: with `--verbose` the debug log on stderr; otherwise only critical messages (the tool says what
    /// went wrong in its own words, once).
    func makeLogger() -> Logger {
        var logger = Logger(label: "nearby") { label in EscapingLogHandler.standardError(label: label) }
        logger.logLevel = verbose ? .debug : .critical
        return logger
    }

    /// The mediums to advertise and discover on: those of `--medium`, or `nil` for all of the manager's.
    var announcedMediums: Set<NearbyConnections.Medium>? {
        guard !mediums.isEmpty else { return nil }
        return Set(connectionMediums.map(NearbyConnections.Medium.init))
    }

    /// The controller `--hci` names, if any.
    func bluetoothController() throws -> BluetoothController? {
        do {
            return try hci.map(BluetoothController.init)
        } catch let error as NearbyError {
            throw CLIFailure(error.message)
        }
    }

    /// The controller and mediums of this run: `--hci` when given; otherwise the system's BlueZ when `bluetoothd`
    /// runs with an adapter and BLE is wanted (no `--medium`, or `--medium ble`), else Wi-Fi LAN only. The choice
    /// and its reason go to the debug log. `--medium ble` without `--hci` and without BlueZ fails
    /// (`bluetoothUnavailable`).
    func bluetoothChoice(logger: Logger) async throws -> BluetoothChoice {
        do {
            let given = try bluetoothController()
            // `--medium audio` alone (publish, subscribe) wants no BLE: BlueZ is not asked.
            let audioOnly = !mediums.isEmpty && connectionMediums.isEmpty
            let choice =
                audioOnly
                ? BluetoothChoice(
                    controller: given, mediums: MediumFactory.selection(named: [], hasBluetoothController: given != nil),
                    reason: "audio only")
                : try await MediumFactory.choose(given: given, named: Set(connectionMediums))
            logger.debug(
                "BLE radio chosen",
                metadata: [
                    "controller": "\(choice.controller.map { "\($0)" } ?? "none")", "reason": "\(choice.reason)",
                    "mediums": "\(choice.mediums.map { "\($0)" }.joined(separator: ","))",
                ])
            return choice
        } catch let error as NearbyError {
            throw CLIFailure("\(error.code): \(error.message)")
        }
    }

    /// The manager for this run, with the mediums the options select. With BLE and without `--no-upgrade`, Wi-Fi
    /// LAN is there too as the bandwidth upgrade target, even when `--medium ble` keeps advertising and discovery
    /// on BLE.
    func makeManager(
        strategy: Strategy, transfer: TransferOptions?, receiveDirectory: URL, listenPort: Int? = nil
    ) async throws -> ConnectionManager {
        if mediums.contains(.audio) { throw ValidationError("--medium audio is for nearby publish and subscribe only") }
        let logger = makeLogger()
        let choice = try await bluetoothChoice(logger: logger)
        var kinds = choice.mediums
        let upgrade = !(transfer?.noUpgrade ?? false)
        if upgrade, kinds.contains(.ble), !kinds.contains(.wifiLAN) { kinds.append(.wifiLAN) }
        let options = ConnectionOptions(
            mediums: kinds.map(NearbyConnections.Medium.init), bluetoothController: choice.controller,
            receiveDirectory: receiveDirectory, keepAlive: keepAlive, listenPort: listenPort,
            autoUpgradeBandwidth: upgrade, limits: transfer?.limits ?? ResourceLimits(), logger: logger,
            autoReconnectWindow: .milliseconds(Int64((transfer?.reconnectWindow ?? 30) * 1000)))
        return ConnectionManager(serviceID: serviceID, strategy: strategy, options: options)
    }
}

/// `--strategy`, for the commands that connect or discover.
struct StrategyOptions: ParsableArguments {
    @Option(help: "How endpoints may connect (default: point-to-point).")
    var strategy: Strategy?

    /// `--strategy`, else the config file's, else point-to-point.
    var value: Strategy {
        if let strategy { return strategy }
        let configured = try? CLIConfig.current().string("strategy", command: CLIConfig.command)
        return configured.flatMap(Strategy.init(argument:)) ?? .pointToPoint
    }

    func validate() throws {
        if strategy == nil, let configured = try CLIConfig.current().string("strategy", command: CLIConfig.command),
            Strategy(argument: configured) == nil
        {
            throw ValidationError("the config file's strategy \(configured) is not point-to-point, star or cluster")
        }
    }
}

/// What the commands that receive payloads (`receive`, `advertise`, `send`) share: where files go, the limits on
/// what a peer may send, bandwidth upgrades, and `--quiet`.
struct TransferOptions: ParsableArguments {
    @Option(
        name: .customLong("receive-dir"),
        help: ArgumentHelp("Where received files go (default: the current directory).", valueName: "receive-dir"))
    var receiveDirOption: String?

    @Flag(help: "No progress lines (results and errors are still printed).")
    var quiet = false

    @Flag(
        name: .customLong("no-upgrade"),
        help: "Keep connections on the medium they started on (no bandwidth upgrade from BLE to Wi-Fi LAN).")
    var noUpgradeFlag = false

    @Option(
        name: .customLong("max-receive-bytes"),
        help: ArgumentHelp(
            "The most file and stream bytes one connection may send us in total (default: 64 GiB).",
            valueName: "max-receive-bytes"))
    var maxReceiveBytesOption: Int64?

    @Option(
        name: .customLong("min-free-space"),
        help: ArgumentHelp(
            "Bytes that must stay free on the receive directory's file system (default: 64 MiB).",
            valueName: "min-free-space"))
    var minFreeSpaceOption: Int64?

    @Option(
        name: .customLong("reconnect-window"),
        help: ArgumentHelp(
            "Seconds a connection whose link broke waits for a new one, resuming payloads in flight (swift-nearby peers only; 0: off; default 30).",
            valueName: "seconds"))
    var reconnectWindow: Double = 30

    func validate() throws {
        if !(reconnectWindow >= 0) {
            throw ValidationError("--reconnect-window must be 0 or more seconds, got \(reconnectWindow)")
        }
        if let maxReceiveBytes, maxReceiveBytes < 0 {
            throw ValidationError("--max-receive-bytes must be 0 or more, got \(maxReceiveBytes)")
        }
        if let minFreeSpace, minFreeSpace < 0 {
            throw ValidationError("--min-free-space must be 0 or more, got \(minFreeSpace)")
        }
    }

    private func configured<T>(_ read: (CLIConfig) throws -> T?) -> T? {
        (try? CLIConfig.current()).flatMap { try? read($0) } ?? nil
    }

    /// `--receive-dir`, else the config file's (`~/` expanded), else the current directory.
    var receiveDirectory: URL {
        let path =
            receiveDirOption
            ?? configured({ try $0.string("receive-dir", command: CLIConfig.command) }).map {
                NSString(string: $0).expandingTildeInPath
            }
            ?? FileManager.default.currentDirectoryPath
        return URL(fileURLWithPath: path)
    }

    /// Whether the receive directory was chosen (by a flag or the config file) rather than defaulted.
    var receiveDirectoryChosen: Bool {
        receiveDirOption != nil || configured({ try $0.string("receive-dir", command: CLIConfig.command) }) != nil
    }

    /// `--quiet`, or `quiet = true` in the config file.
    var isQuiet: Bool {
        quiet || configured({ try $0.bool("quiet", command: CLIConfig.command) }) == true
    }

    /// `--no-upgrade`, or `no-upgrade = true` in the config file.
    var noUpgrade: Bool {
        noUpgradeFlag || configured({ try $0.bool("no-upgrade", command: CLIConfig.command) }) == true
    }

    var maxReceiveBytes: Int64? {
        maxReceiveBytesOption ?? configured { try $0.integer("max-receive-bytes", command: CLIConfig.command) }
    }

    var minFreeSpace: Int64? {
        minFreeSpaceOption ?? configured { try $0.integer("min-free-space", command: CLIConfig.command) }
    }

    /// The resource limits of `--max-receive-bytes` and `--min-free-space` (defaults otherwise).
    var limits: ResourceLimits {
        var limits = ResourceLimits()
        if let maxReceiveBytes { limits.maxReceivedBytesPerConnection = maxReceiveBytes }
        if let minFreeSpace { limits.minimumFreeDiskSpace = minFreeSpace }
        return limits
    }

    /// The receive directory, made if missing and checked: a directory, writable, with more free space than
    /// `--min-free-space`. Checked at start, so a bad directory is reported before any peer sends a byte.
    /// - Throws: `CLIFailure` naming the directory and the cause (exit 1).
    func preparedReceiveDirectory() throws -> URL {
        let directory = receiveDirectory
        try ReceiveDirectoryCheck.prepare(directory, minimumFreeSpace: limits.minimumFreeDiskSpace)
        return directory
    }
}

/// `--name TEXT` or `--info-hex HEX`: the endpoint info this side advertises or introduces itself with; by
/// default the config file's `name`, else this machine's host name.
struct EndpointInfoOptions: ParsableArguments {
    @Option(help: "This device's name, its endpoint info (default: the host name).")
    var name: String?

    @Option(name: .customLong("info-hex"), help: "This device's endpoint info as hex bytes.")
    var infoHex: String?

    func validate() throws {
        guard name == nil || infoHex == nil else {
            throw ValidationError("give only one of --name and --info-hex")
        }
        let info = try bytes()
        guard !info.isEmpty, info.count <= 131 else {
            throw ValidationError("endpoint info must be 1 to 131 bytes, got \(info.count)")
        }
    }

    func bytes() throws -> [UInt8] {
        if let name { return Array(name.utf8) }
        if let infoHex {
            do {
                return try Hex.decode(infoHex)
            } catch {
                throw ValidationError("--info-hex: \(error.message)")
            }
        }
        if let configured = try CLIConfig.current().string("name", command: CLIConfig.command) {
            return Array(configured.utf8)
        }
        return Array(Defaults.deviceName().utf8)
    }
}

/// `--strategy point-to-point|star|cluster`, parsed once by ArgumentParser.
extension Strategy: ExpressibleByArgument {}
