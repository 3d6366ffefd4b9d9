import ArgumentParser
import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyWire

/// Options every subcommand takes.
struct CommonOptions: ParsableArguments {
    @Option(name: .customLong("service-id"), help: "The service ID both sides use.")
    var serviceID: String

    @Option(help: "How endpoints may connect.")
    var strategy: Strategy = .pointToPoint

    @Option(
        name: .customLong("medium"),
        help: "A medium to use (repeatable; default: all available; audio: publish and subscribe only).")
    var mediums: [CLIMedium] = []

    /// The Connections mediums of `--medium` (audio is not one).
    var connectionMediums: [MediumKind] { mediums.compactMap(\.kind) }

    @Option(help: "BLE radio: a controller for our own host (tcp:HOST:PORT, uart:/dev/ttyX[@BAUD], hci:N) or bluez[:hciN] (default: the system's BlueZ when bluetoothd runs, else no BLE).")
    var hci: String?

    @Flag(
        name: .customLong("no-upgrade"),
        help: "Keep connections on the medium they started on (no bandwidth upgrade from BLE to Wi-Fi LAN).")
    var noUpgrade = false

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @Flag(help: "Print the debug log on stderr.")
    var verbose = false

    @Option(
        name: .customLong("max-receive-bytes"),
        help: "The most file and stream bytes one connection may send us in total (default: 64 GiB).")
    var maxReceiveBytes: Int64?

    @Option(
        name: .customLong("min-free-space"),
        help: "Bytes that must stay free on the receive directory's file system (default: 64 MiB).")
    var minFreeSpace: Int64?

    @Option(
        name: .customLong("reconnect-window"),
        help: "Seconds a connection whose link broke waits for a new one, resuming payloads in flight (swift-nearby peers only; 0: off; default 30).")
    var reconnectWindow: Double = 30

    @Option(name: .customLong("keep-alive-interval-ms"), help: .hidden)
    var keepAliveIntervalMillis: Int?

    @Option(name: .customLong("keep-alive-timeout-ms"), help: .hidden)
    var keepAliveTimeoutMillis: Int?

    func validate() throws {
        if let maxReceiveBytes, maxReceiveBytes < 0 {
            throw ValidationError("--max-receive-bytes must be 0 or more, got \(maxReceiveBytes)")
        }
        if !(reconnectWindow >= 0) {
            throw ValidationError("--reconnect-window must be 0 or more seconds, got \(reconnectWindow)")
        }
        if let minFreeSpace, minFreeSpace < 0 {
            throw ValidationError("--min-free-space must be 0 or more, got \(minFreeSpace)")
        }
    }

    var keepAlive: KeepAliveSettings {
        guard let interval = keepAliveIntervalMillis, let timeout = keepAliveTimeoutMillis else { return .default }
        return KeepAliveSettings(interval: .milliseconds(interval), timeout: .milliseconds(timeout))
    }

    /// The resource limits of `--max-receive-bytes` and `--min-free-space` (defaults otherwise).
    var limits: ResourceLimits {
        var limits = ResourceLimits()
        if let maxReceiveBytes { limits.maxReceivedBytesPerConnection = maxReceiveBytes }
        if let minFreeSpace { limits.minimumFreeDiskSpace = minFreeSpace }
        return limits
    }

    func makeLogger() -> Logger {
        var logger = Logger(label: "nearby") { label in EscapingLogHandler.standardError(label: label) }
        logger.logLevel = verbose ? .debug : .warning
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
    func makeManager(receiveDirectory: URL, listenPort: Int? = nil) async throws -> ConnectionManager {
        if mediums.contains(.audio) { throw ValidationError("--medium audio is for nearby publish and subscribe only") }
        let logger = makeLogger()
        let choice = try await bluetoothChoice(logger: logger)
        var kinds = choice.mediums
        if !noUpgrade, kinds.contains(.ble), !kinds.contains(.wifiLAN) { kinds.append(.wifiLAN) }
        let options = ConnectionOptions(
            mediums: kinds.map(NearbyConnections.Medium.init), bluetoothController: choice.controller,
            receiveDirectory: receiveDirectory, keepAlive: keepAlive, listenPort: listenPort,
            autoUpgradeBandwidth: !noUpgrade, limits: limits, logger: logger,
            autoReconnectWindow: .milliseconds(Int64(reconnectWindow * 1000)))
        return ConnectionManager(serviceID: serviceID, strategy: strategy, options: options)
    }
}

/// `--name TEXT` or `--info-hex HEX`: the endpoint info this side advertises or introduces itself with.
struct EndpointInfoOptions: ParsableArguments {
    @Option(help: "This device's name (its endpoint info, UTF-8).")
    var name: String?

    @Option(name: .customLong("info-hex"), help: "This device's endpoint info as hex bytes.")
    var infoHex: String?

    func validate() throws {
        guard (name == nil) != (infoHex == nil) else {
            throw ValidationError("give exactly one of --name and --info-hex")
        }
        let info = try bytes()
        guard !info.isEmpty, info.count <= 131 else {
            throw ValidationError("endpoint info must be 1 to 131 bytes, got \(info.count)")
        }
    }

    func bytes() throws -> [UInt8] {
        if let name { return Array(name.utf8) }
        do {
            return try Hex.decode(infoHex ?? "")
        } catch {
            throw ValidationError("--info-hex: \(error.message)")
        }
    }
}

/// `--strategy point-to-point|star|cluster`, parsed once by ArgumentParser.
extension Strategy: ExpressibleByArgument {}

