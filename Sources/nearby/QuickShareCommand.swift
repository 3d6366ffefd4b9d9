import ArgumentParser
import Foundation
import Logging
import NearbyConnections
import NearbyQuickShare

/// `nearby quickshare receive|send`: exchange files and text with Quick Share devices (Android phones, Chromebooks,
/// Windows PCs with Google's app, and other implementations).
struct QuickShareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quickshare",
        abstract: "Send and receive files and text with Quick Share (Nearby Share) devices.",
        subcommands: [QuickShareReceiveCommand.self, QuickShareSendCommand.self])
}

/// Options both Quick Share subcommands take.
struct QuickShareCommonOptions: ParsableArguments {
    @Option(help: "The name other devices show for this one (default: the host name).")
    var name: String?

    @Option(name: .customLong("device-type"), help: "phone, tablet, laptop, car, foldable, xr or unknown.")
    var deviceType: String = "laptop"

    @Flag(name: .customLong("no-beacon"), help: "Do not advertise the Bluetooth wake-up beacon (0xFE2C) through BlueZ.")
    var noBeacon = false

    @Option(name: .customLong("os-type"), help: .hidden)
    var osType: String = QuickShareReportedOS.android.rawValue

    @Flag(help: "Print one JSON object per line.")
    var json = false

    @Flag(help: "Print the debug log on stderr.")
    var verbose = false

    func validate() throws {
        guard QuickShareDeviceType(name: deviceType) != nil else {
            throw ValidationError("--device-type must be one of \(QuickShareDeviceType.allCases.map(\.description).joined(separator: ", "))")
        }
        guard QuickShareReportedOS(rawValue: osType) != nil else {
            throw ValidationError("--os-type must be one of \(QuickShareReportedOS.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let name, name.isEmpty || name.utf8.count > 113 {
            throw ValidationError("--name must have 1 to 113 UTF-8 bytes")
        }
    }

    func options(receiveDirectory: URL? = nil, port: Int? = nil) -> QuickShareOptions {
        var logger = Logger(label: "nearby") { label in StreamLogHandler.standardError(label: label) }
        logger.logLevel = verbose ? .debug : .warning
        var options = QuickShareOptions(
            deviceName: name ?? ProcessInfo.processInfo.hostName, deviceType: QuickShareDeviceType(name: deviceType) ?? .laptop,
            listenPort: port, reportedOS: QuickShareReportedOS(rawValue: osType) ?? .android, wakeUpBeacon: !noBeacon,
            logger: logger)
        if let receiveDirectory { options.receiveDirectory = receiveDirectory }
        return options
    }
}

/// `nearby quickshare receive`: be visible to Quick Share senders and take what they send, until interrupted.
struct QuickShareReceiveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receive", abstract: "Be visible to Quick Share senders nearby and receive what they send.")

    @OptionGroup var common: QuickShareCommonOptions

    @Flag(help: "Accept every share without asking (otherwise ask on a terminal, and reject without one).")
    var accept = false

    @Option(name: .customLong("receive-dir"), help: "Where received files go (default: the current directory).")
    var receiveDir: String?

    @Option(help: "TCP port to listen on (default: chosen by the system).")
    var port: Int?

    @Flag(help: "Exit after the first share ends: 0 when it completed, 1 otherwise.")
    var once = false

    @Option(
        name: .customLong("min-free-space"),
        help: "Bytes that must stay free on the receive directory's file system (default: 64 MiB).")
    var minFreeSpace: Int64?

    func run() async throws {
        let output = EventOutput(json: common.json)
        let directory = URL(fileURLWithPath: receiveDir ?? FileManager.default.currentDirectoryPath)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var options = common.options(receiveDirectory: directory, port: port)
        if let minFreeSpace { options.connectionLimits.minimumFreeDiskSpace = minFreeSpace }
        let receiver = QuickShareReceiver(options: options)
        let events = receiver.events
        let advertising: QuickShareReceiver.Advertising
        do {
            advertising = try await receiver.start()
        } catch let error as NearbyError {
            throw CLIFailure("cannot advertise: \(error.message)")
        }
        output.event(
            "quickshare_advertising",
            QuickShareAdvertisingEvent(
                endpointID: advertising.endpointID, port: advertising.port ?? 0, serviceType: advertising.serviceType,
                instanceName: advertising.instanceName, name: receiver.endpointInfo.deviceName ?? "",
                deviceType: receiver.endpointInfo.deviceType.description),
            human: "visible to Quick Share as \"\(receiver.endpointInfo.deviceName ?? "")\" (\(advertising.endpointID), port \(advertising.port ?? 0))")
        if let problem = advertising.discoverabilityProblem {
            EventOutput.warn(problem.message)
        }
        QuickShareCLIEvents.beacon(advertising.beacon, output: output)

        let printer = QuickShareEventPrinter(output: output)
        let decision: QuickShareEventPrinter.Decision = accept ? .accept : .askOrReject
        let loop = Task { () -> QuickShareResult? in
            for await event in events {
                if let result = await printer.handle(event, receiver: receiver, decision: decision), once {
                    return result
                }
            }
            return nil
        }
        let cancelSignal = await CancelSignal.install { await receiver.cancelAll() }
        defer { cancelSignal.cancel() }
        let outcome = await withTaskGroup(of: QuickShareResult?.self) { group in
            group.addTask { await loop.value }
            group.addTask {
                _ = await Signals.waitForTermination()
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        loop.cancel()
        await receiver.stop()
        if once, let outcome, case .completed = outcome { return }
        if once { throw CLIFailure("the share did not complete: \(outcome.map { "\($0)" } ?? "interrupted")") }
    }
}

/// `nearby quickshare send`: find a Quick Share receiver and send it files and texts.
struct QuickShareSendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Send files and text to a Quick Share device nearby.")

    @OptionGroup var common: QuickShareCommonOptions

    @Argument(help: "Files to send.")
    var files: [String] = []

    @Option(name: .customLong("text"), help: "A text (or URL) to send (repeatable).")
    var texts: [String] = []

    @Option(help: "The receiver's name as it shows it (default: the first receiver found).")
    var to: String?

    @Option(help: "Seconds to look for the receiver.")
    var timeout: Double = 30

    func validate() throws {
        guard !files.isEmpty || !texts.isEmpty else { throw ValidationError("give at least one FILE or --text") }
        for file in files {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isReadableFile(atPath: file)
            else { throw ValidationError("cannot read file \(file)") }
        }
        for text in texts where text.isEmpty || text.utf8.count > 1_047_552 {
            throw ValidationError("a --text has 1 to 1047552 bytes")
        }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() async throws {
        let output = EventOutput(json: common.json)
        let sender = QuickShareSender(options: common.options())
        let events = sender.events
        let beacon: QuickShareBeaconStatus
        do {
            beacon = try await sender.startDiscovery()
        } catch let error as NearbyError {
            throw CLIFailure("cannot discover: \(error.message)")
        }
        QuickShareCLIEvents.beacon(beacon, output: output)
        let items = texts.map(QuickShareItem.text) + files.map { QuickShareItem.file(URL(fileURLWithPath: $0)) }
        let printer = QuickShareEventPrinter(output: output)
        let wanted = to
        let timeout = self.timeout
        let cancelSignal = await CancelSignal.install { await sender.cancelAll() }
        defer { cancelSignal.cancel() }
        let result: QuickShareResult? = await withTaskGroup(of: QuickShareResult?.self) { group in
            group.addTask {
                var target: String?
                for await event in events {
                    if case .deviceFound(let device) = event, target == nil,
                        wanted == nil || device.name == wanted
                    {
                        target = device.endpointID
                        await printer.print(event)
                        do {
                            try await sender.send(items, to: device.endpointID)
                        } catch {
                            return .failed(error as? NearbyError ?? NearbyError(.unknown, "\(error)"))
                        }
                        continue
                    }
                    if case .deviceFound = event { continue }
                    if case .deviceLost = event { continue }
                    await printer.print(event)
                    if case .finished(let endpointID, let result) = event, endpointID == target { return result }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(timeout))
                return .failed(NearbyError(.timeout, "no Quick Share receiver\(wanted.map { " named \"\($0)\"" } ?? "") found within \(Int(timeout)) s"))
            }
            group.addTask {
                _ = await Signals.waitForTermination()
                return .canceled(byPeer: false)
            }
            var first = await group.next() ?? nil
            // The discovery deadline only counts until a share starts.
            while case .failed(let error) = first, error.code == .timeout, await printer.shareStarted {
                first = await group.next() ?? nil
            }
            group.cancelAll()
            return first
        }
        if case .canceled(byPeer: false) = result ?? .canceled(byPeer: false) { await sender.cancelAll() }
        await sender.stop()
        guard let result else { throw CLIFailure("interrupted") }
        guard case .completed = result else { throw CLIFailure("the share did not complete: \(result)") }
    }
}
