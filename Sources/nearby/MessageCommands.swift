import ArgumentParser
import Foundation
import Logging
import NearbyConnections
import NearbyCore
import NearbyMessages
import NearbyWire

/// Options of the message commands beyond ``CommonOptions``.
struct MessageOptions: ParsableArguments {
    @Option(help: "The message namespace (default: the service's own, empty).")
    var namespace: String?

    @Option(help: "The message type (default: empty).")
    var type: String?

    @Flag(name: .customLong("ask-consent"), help: "Ask for consent on the terminal when it is not yet persisted.")
    var askConsent = false
}

extension CommonOptions {
    /// The message manager for this run. Running a command is consent for that run (the CLI contract); with
    /// `--ask-consent` on a terminal the user is asked and the answer is persisted.
    func makeMessageManager(
        askConsent: Bool, problems: @escaping @Sendable (NearbyError, _ fatal: Bool) -> Void
    ) async throws -> (MessageManager, MessageStrategy) {
        let choice = try await bluetoothChoice(logger: makeLogger())
        let controller = choice.controller
        let selected = choice.mediums
        var strategyMediums: MessageStrategy.Mediums = []
        if selected.contains(.wifiLAN) { strategyMediums.insert(.wifiLAN) }
        if selected.contains(.ble) { strategyMediums.insert(.ble) }
        if mediums.contains(.audio) { strategyMediums = connectionMediums.isEmpty ? .audio : strategyMediums.union(.audio) }
        let onlyWiFi = strategyMediums == .wifiLAN || strategyMediums == .audio
        let grantForThisRun: PermissionRequestHandler = { @Sendable () async -> ConsentDecision in .grantForThisRun }
        let request = askConsent ? terminalPermissionRequest : grantForThisRun
        let manager = MessageManager(
            serviceID: serviceID, debugLogging: verbose, logger: makeLogger(),
            permissionRequest: request, bluetoothController: controller,
            onBluetoothProblem: { problems($0, false) },
            onMDNSProblem: { problems($0, onlyWiFi) },
            onConsentProblem: { problems($0, true) })
        return (manager, MessageStrategy(mediums: strategyMediums))
    }
}

/// Collects the first fatal problem a handler reports, and warns about the others.
final class ProblemSink: Sendable {
    /// Waits for the first fatal problem (returned as a failure named with `prefix`), the timeout (seconds; `nil`
    /// waits for SIGINT/SIGTERM) or a termination signal, whichever comes first.
    func firstFailure(prefix: String, timeout: Double?) async -> CLIFailure? {
        await firstOf(
            { await self.first().map { CLIFailure("\(prefix): \($0.message)") } },
            {
                if let timeout {
                    try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                } else {
                    _ = await Signals.waitForTermination()
                }
                return nil
            })
    }

    private let (stream, continuation) = AsyncStream<NearbyError>.makeStream()

    func report(_ error: NearbyError, fatal: Bool) {
        if fatal {
            continuation.yield(error)
        } else {
            FileHandle.standardError.write(Data("nearby: warning: \(error.message)\n".utf8))
        }
    }

    /// The first fatal problem.
    func first() async -> NearbyError? {
        for await error in stream { return error }
        return nil
    }
}

/// `nearby publish`: publish one message until interrupted or its TTL runs out.
struct PublishCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish", abstract: "Publish a message to nearby subscribers until interrupted.")

    @OptionGroup var common: CommonOptions
    @OptionGroup var messageOptions: MessageOptions
    @OptionGroup var contentOptions: MessageContentOptions

    @Option(help: "Stop after this many seconds.")
    var ttl: Double = 300

    @Flag(help: "Advertise the message bytes themselves as the endpoint info (Google's migration-guide form).")
    var plain = false

    @OptionGroup var via: ViaServiceOptions

    func validate() throws {
        guard ttl > 0 else { throw ValidationError("--ttl must be positive") }
        try via.check(common, inProcessOnly: [("--plain", plain), ("--ask-consent", messageOptions.askConsent)])
    }

    func run() async throws {
        if via.viaService { return try await runViaService() }
        let output = EventOutput(json: common.json)
        let sink = ProblemSink()
        let (manager, strategy) = try await common.makeMessageManager(askConsent: messageOptions.askConsent) { sink.report($0, fatal: $1) }
        manager.printAudioStatus(to: output)
        manager.printBluetoothStatus(to: output)
        let content = Data(try contentOptions.content())
        let payload = Message(content: content, namespace: messageOptions.namespace ?? "", type: messageOptions.type ?? "")
        let expired = AsyncStream<Void>.makeStream()
        let publication: Publication
        do {
            publication = try await manager.publish(
                payload,
                options: PublishOptions(
                    strategy: strategy, ttl: .milliseconds(Int(ttl * 1000)), onExpired: { expired.continuation.yield() },
                    plainEndpointInfo: plain))
        } catch let error as NearbyError {
            throw CLIFailure("cannot publish: \(error.message)")
        }
        output.event(
            "publishing",
            PublishingEvent(
                endpointID: publication.endpointID, size: payload.content.count, namespace: payload.namespace,
                type: payload.type,
                mediums: publication.mediums.map(\.rawValue) + (strategy.mediums.contains(.audio) ? ["audio"] : [])),
            human: "publishing \(payload.content.count) bytes as \(publication.endpointID)")
        let failure = await firstOf(
            { await sink.first().map { CLIFailure("cannot publish: \($0.message)") } },
            { _ = await Signals.waitForTermination(); return nil },
            { for await _ in expired.stream { break }; return nil })
        await publication.cancel()
        if let failure { throw failure }
    }
}

/// `nearby subscribe`: print messages as they are found and lost.
struct SubscribeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "subscribe", abstract: "Print nearby messages as they are found and lost.")

    @OptionGroup var common: CommonOptions

    @Option(help: "Only messages of this namespace (with --type: and this type).")
    var namespace: String?

    @Option(help: "Only messages of this type (needs --namespace; default namespace when omitted).")
    var type: String?

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var timeout: Double?

    @Flag(name: .customLong("ask-consent"), help: "Ask for consent on the terminal when it is not yet persisted.")
    var askConsent = false

    @Flag(help: "Also report advertisers whose endpoint info is the message itself (Google's migration-guide form).")
    var plain = false

    @OptionGroup var via: ViaServiceOptions

    func validate() throws {
        try via.check(common, inProcessOnly: [("--plain", plain), ("--ask-consent", askConsent)])
    }

    func run() async throws {
        if via.viaService { return try await runViaService() }
        let output = EventOutput(json: common.json)
        let sink = ProblemSink()
        let (manager, strategy) = try await common.makeMessageManager(askConsent: askConsent) { sink.report($0, fatal: $1) }
        manager.printAudioStatus(to: output)
        manager.printBluetoothStatus(to: output)
        var filter = MessageFilter()
        if namespace != nil || type != nil {
            do {
                filter = try MessageFilter.namespacedType(namespace ?? "", type)
            } catch { throw ValidationError(error.message) }
        }
        let subscription: Subscription
        do {
            subscription = try await manager.subscribe(
                options: SubscribeOptions(strategy: strategy, filter: filter, ttl: nil, includePlainEndpointInfo: plain))
        } catch let error as NearbyError {
            throw CLIFailure("cannot subscribe: \(error.message)")
        }
        let events = subscription.events
        let printing = Task {
            for await event in events {
                let message = event.message
                output.event(
                    "message_\(event.kind.rawValue)",
                    MessageEventFields(message),
                    human: "\(event.kind): \(message.namespace)/\(message.type): \(message.text ?? Hex.encode(message.content))")
            }
        }
        let failure = await sink.firstFailure(prefix: "cannot subscribe", timeout: timeout)
        await subscription.cancel()
        printing.cancel()
        if let failure { throw failure }
    }
}

/// `nearby beacons`: print BLE beacons as they are found and lost.
struct BeaconsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "beacons", abstract: "Print BLE beacons (Eddystone, iBeacon, AltBeacon) as they are found and lost.")

    @Option(help: "BLE radio: a controller for our own host (tcp:HOST:PORT, uart:/dev/ttyX[@BAUD], hci:N) or bluez[:hciN] (default: the system's BlueZ when bluetoothd runs with an adapter).")
    var hci: String?

    @Option(help: "Stop after this many seconds (default: run until interrupted).")
    var timeout: Double?

    @Option(name: .customLong("lost-after"), help: "Seconds a beacon may go unseen before it is lost.")
    var lostAfter: Double = 10

    @Option(help: "Decode advertising reports from this file instead of a controller: one 'ADDRESS RSSI HEX' per line.")
    var replay: String?

    @Flag(name: .customLong("no-ibeacons"), help: "Only Eddystone beacons.")
    var noIBeacons = false

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @Flag(help: "Print the debug log on stderr.")
    var verbose = false

    func run() async throws {
        if let replay {
            return try await scan(ReplayReportSource(try ReplayReportSource.parse(fileAt: replay)))
        }
        try await scan(try await Self.makeScanner(hci: hci, verbose: verbose))
    }

    /// The BLE scanner for `--hci`; without `--hci`, on the system's BlueZ when `bluetoothd` runs with an adapter
    /// (as `nearby advertise` chooses its radio).
    /// - Throws: `CLIFailure` (exit 1) saying why when there is no `--hci` and BlueZ is not usable.
    static func makeScanner(hci: String?, verbose: Bool = false) async throws -> any AdvertisingReportSource {
        let spec: String
        if let hci {
            spec = hci
        } else {
            let choice: BluetoothChoice
            do {
                choice = try await MediumFactory.choose(given: nil, named: [.ble])
            } catch {
                throw CLIFailure(
                    "\((error as? NearbyError)?.message ?? "\(error)") (or --replay FILE to decode saved reports)")
            }
            guard let controller = choice.controller else {
                throw CLIFailure("nearby beacons needs a Bluetooth radio: \(choice.reason)")
            }
            if verbose { FileHandle.standardError.write(Data("nearby beacons: \(choice.reason)\n".utf8)) }
            spec = controller.description
        }
        do {
            return try BLEBeaconScanner(hci: spec)
        } catch {
            throw ValidationError("\((error as? NearbyError)?.message ?? "\(error)")")
        }
    }

    /// Subscribes to beacons from `source` and prints `beacon_found` / `beacon_lost` until the timeout or a signal.
    func scan(_ source: any AdvertisingReportSource) async throws {
        let output = EventOutput(json: json)
        let sink = ProblemSink()
        var logger = Logger(label: "nearby") { label in EscapingLogHandler.standardError(label: label) }
        logger.logLevel = verbose ? .debug : .warning
        let manager = MessageManager(
            serviceID: "beacons", debugLogging: verbose, logger: logger,
            permissionRequest: { @Sendable () async -> ConsentDecision in .grantForThisRun }, beaconSource: source,
            onBluetoothProblem: { sink.report($0, fatal: true) })
        let strategy = BeaconStrategy(includeIBeacons: !noIBeacons, lostAfter: .milliseconds(Int(lostAfter * 1000)))
        let subscription = try await manager.subscribe(
            options: SubscribeOptions(beaconStrategy: strategy, deviceTypes: .bleBeacons, ttl: nil))
        let events = subscription.events
        let printing = Task {
            for await event in events {
                guard let beacon = event.beacon else { continue }
                output.event(
                    event.kind == .found ? "beacon_found" : "beacon_lost", BeaconEventFields(beacon),
                    human: "\(event.kind): \(beacon.frame.kind) \(beacon.address)")
            }
        }
        let failure = await sink.firstFailure(prefix: "BLE scanning failed", timeout: timeout)
        await subscription.cancel()
        printing.cancel()
        if let failure { throw failure }
    }
}

/// Advertising reports read from a file (`ADDRESS RSSI HEX` per line, `#` comments), yielded once each; the stream
/// then stays open so that beacons are lost after their unseen time.
struct ReplayReportSource: AdvertisingReportSource {
    let reports: [AdvertisingReport]

    init(_ reports: [AdvertisingReport]) { self.reports = reports }

    static func parse(fileAt path: String) throws -> [AdvertisingReport] {
        let text: String
        do { text = try String(contentsOfFile: path, encoding: .utf8) } catch { throw CLIFailure("cannot read \(path): \(error.localizedDescription)") }
        var reports: [AdvertisingReport] = []
        for (number, line) in text.split(separator: "\n").enumerated() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard !fields.isEmpty, !fields[0].hasPrefix("#") else { continue }
            guard fields.count == 3, let rssi = Int(fields[1]), let data = try? Hex.decode(String(fields[2])) else {
                throw CLIFailure("\(path):\(number + 1): expected 'ADDRESS RSSI HEX'")
            }
            reports.append(AdvertisingReport(address: String(fields[0]), rssi: rssi, data: data))
        }
        return reports
    }

    func advertisingReports(_ settings: BeaconScanSettings) -> AsyncThrowingStream<AdvertisingReport, any Error> {
        let (stream, continuation) = AsyncThrowingStream<AdvertisingReport, any Error>.makeStream()
        for report in reports { continuation.yield(report) }
        return stream
    }
}

/// Runs the bodies concurrently and returns the first one's result; the others are cancelled and left behind
/// (some, like a signal wait, do not end on cancellation, and the command is about to exit).
func firstOf<T: Sendable>(_ bodies: (@Sendable () async -> T)...) async -> T {
    let race = TimeoutRace<T>()
    let tasks = LockedValue<[Task<Void, Never>]>([])
    let result = try? await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        race.set(continuation)
        for body in bodies {
            let task = Task { race.finish(.success(await body())) }
            tasks.withLock { $0.append(task) }
        }
    }
    for task in tasks.withLock({ $0 }) { task.cancel() }
    return result!
}
