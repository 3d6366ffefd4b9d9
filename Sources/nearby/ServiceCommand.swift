import ArgumentParser
import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyMessages
import NearbyMessagesService
import NearbyWire

/// `nearby service`: the background service of Nearby Messages and its clients (docs/MESSAGES-SERVICE.md).
struct ServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "service",
        abstract: "Keep publications and subscriptions alive in the background, and talk to that service.",
        discussion: """
            `nearby service` (or `nearby service run`) listens on a Unix socket; the other subcommands are its \
            clients. What a client makes with --background is saved in the state file, outlives the client and is \
            restored when the service starts again; the rest ends when the client exits.
            """,
        subcommands: [
            ServiceRunCommand.self, ServicePublishCommand.self, ServiceSubscribeCommand.self, ServiceWatchCommand.self,
            ServiceListCommand.self, ServiceUnpublishCommand.self, ServiceUnsubscribeCommand.self,
        ],
        defaultSubcommand: ServiceRunCommand.self)
}

/// `--socket PATH`, shared by the service and its clients.
struct ServiceSocketOptions: ParsableArguments {
    @Option(help: "The service's Unix socket (default: $XDG_RUNTIME_DIR/nearby/service.sock).")
    var socket: String?

    @Flag(help: "Print one JSON object per line.")
    var json = false

    var socketURL: URL { socket.map { URL(fileURLWithPath: $0) } ?? ServicePaths.defaultSocket }

    /// A connection to the service.
    func connect() async throws -> MessageServiceClient {
        do {
            return try await MessageServiceClient.connect(socketPath: socketURL)
        } catch {
            throw CLIFailure(error.message)
        }
    }
}

/// `nearby service run`: the service itself, until SIGINT or SIGTERM.
struct ServiceRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run", abstract: "Run the service until SIGINT or SIGTERM (the default subcommand).")

    @OptionGroup var socketOptions: ServiceSocketOptions

    @Option(help: "The state file of background items (default: $XDG_STATE_HOME/nearby/service.json).")
    var state: String?

    @Flag(help: "Show found and lost messages as desktop notifications (org.freedesktop.Notifications over D-Bus, else notify-send).")
    var notify = false

    @Option(name: .customLong("medium"), help: "A medium to use: wifi-lan, ble or audio (repeatable; default: all available).")
    var mediums: [CLIMedium] = []

    @Option(help: "BLE radio: tcp:HOST:PORT, uart:/dev/ttyX[@BAUD], hci:N or bluez[:hciN] (default: the system's BlueZ when bluetoothd runs, else no BLE).")
    var hci: String?

    @Flag(help: "Print the debug log on stderr.")
    var verbose = false

    func run() async throws {
        let output = EventOutput(json: socketOptions.json)
        let verbose = self.verbose
        var serviceLogger = Logger(label: "nearby.service") { label in EscapingLogHandler.standardError(label: label) }
        serviceLogger.logLevel = verbose ? .debug : .warning
        let logger = serviceLogger
        let given: BluetoothController?
        do { given = try hci.map(BluetoothController.init) } catch { throw CLIFailure("\(error)") }
        let connectionMediums = mediums.compactMap(\.kind)
        let choice: BluetoothChoice
        if !mediums.isEmpty, connectionMediums.isEmpty {
            // `--medium audio` alone wants no BLE: BlueZ is not asked.
            choice = BluetoothChoice(
                controller: given, mediums: MediumFactory.selection(named: [], hasBluetoothController: given != nil),
                reason: "audio only")
        } else {
            do {
                choice = try await MediumFactory.choose(given: given, named: Set(connectionMediums))
            } catch let error as NearbyError {
                throw CLIFailure("\(error.code): \(error.message)")
            }
        }
        logger.debug("BLE radio chosen", metadata: ["controller": "\(choice.controller.map { "\($0)" } ?? "none")", "reason": "\(choice.reason)"])
        let controller = choice.controller
        let kinds = choice.mediums
        var strategyMediums: MessageStrategy.Mediums = []
        if kinds.contains(.wifiLAN) { strategyMediums.insert(.wifiLAN) }
        if kinds.contains(.ble) { strategyMediums.insert(.ble) }
        // As in `nearby subscribe`: `--medium audio` alone means audio-only (heard, content over Wi-Fi LAN).
        if mediums.contains(.audio) { strategyMediums = connectionMediums.isEmpty ? .audio : strategyMediums.union(.audio) }

        var notifier: DesktopNotifier?
        if notify {
            notifier = await DesktopNotifier.make(logger: logger)
            if notifier == nil {
                EventOutput.warn(
                    "warning: --notify: no org.freedesktop.Notifications on the session bus and no notify-send on PATH; no desktop notifications")
            }
        }
        let stateURL = state.map { URL(fileURLWithPath: $0) } ?? ServicePaths.defaultStateFile
        let factory: MessageService.ManagerFactory = { serviceID in
            // Running the service is the user's consent for its run (the CLI contract).
            MessageManager(
                serviceID: serviceID, debugLogging: verbose, logger: logger,
                permissionRequest: { @Sendable () async -> ConsentDecision in .grantForThisRun },
                bluetoothController: controller,
                onBluetoothProblem: { EventOutput.warn("warning: \($0.message)") },
                onMDNSProblem: { EventOutput.warn("warning: \($0.message)") })
        }
        let service = MessageService(
            managerFactory: factory, strategy: MessageStrategy(mediums: strategyMediums),
            stateFile: ServiceStateFile(url: stateURL), notifier: notifier, logger: logger)
        let server: MessageServiceServer
        do {
            server = try await MessageServiceServer.bind(socketPath: socketOptions.socketURL, service: service, logger: logger)
        } catch {
            throw CLIFailure("cannot start the service: \(error.message)")
        }
        let serving = Task { await server.run() }
        for problem in await service.restore() { EventOutput.warn("warning: \(problem.message)") }
        let restored = await service.entries.count
        output.event(
            "service_started",
            ServiceStartedEvent(
                socket: server.socketPath.path, state: stateURL.path, restored: restored, notify: notifier != nil,
                notifier: notifier.map(\.backendName)),
            human: "nearby service listening on \(server.socketPath.path) (\(restored) restored from \(stateURL.path))")
        _ = await Signals.waitForTermination()
        await server.close()
        await service.shutdown()
        await serving.value
        output.event("service_stopped", ServiceStoppedEvent(socket: server.socketPath.path), human: "nearby service stopped")
    }
}

/// `service_started`.
struct ServiceStartedEvent: Encodable {
    var socket: String
    var state: String
    var restored: Int
    var notify: Bool
    /// `dbus` or `notify-send` with `--notify`.
    var notifier: String?
}

extension DesktopNotifier {
    /// `dbus` or `notify-send`.
    var backendName: String {
        switch backend {
        case .dbus: "dbus"
        case .notifySend: "notify-send"
        }
    }
}

/// `service_stopped`.
struct ServiceStoppedEvent: Encodable {
    var socket: String
}
