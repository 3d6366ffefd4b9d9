import ArgumentParser
import Foundation
import Logging
import NearbyBlueZ
import NearbyWire

/// `nearby-bluez-probe`: drives NearbyBlueZ from the command line, one line per event on stdout. Used inside the
/// BlueZ VM rig (scripts/test-bluez-vm.sh); also handy on a desktop to check what BlueZ offers.
@main
struct ProbeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nearby-bluez-probe",
        abstract: "Advertise or scan through BlueZ over D-Bus and print what happens.",
        subcommands: [AdvertiseProbe.self, ScanProbe.self])
}

struct CommonProbeOptions: ParsableArguments {
    @Option(help: "The adapter (hciN); default: BlueZ's first adapter.")
    var adapter: String?

    @Flag(help: "Log at debug level to stderr.")
    var verbose = false

    func open() async throws -> BlueZAdapter {
        var logger = Logger(label: "nearby.bluez-probe")
        logger.logLevel = verbose ? .debug : .warning
        let client = try await DBusClient.system(logger: logger)
        return try await BlueZAdapter.find(on: client, name: adapter, logger: logger)
    }
}

/// Writes a line to stdout unbuffered (the guest script reads it from a file while the probe runs).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func parseHex(_ text: String) throws -> [UInt8] {
    let digits = Array(text.utf8)
    guard digits.count % 2 == 0 else { throw ValidationError("odd number of hex digits in \(text)") }
    return try stride(from: 0, to: digits.count, by: 2).map { index in
        guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
            throw ValidationError("not hex: \(text)")
        }
        return byte
    }
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

struct AdvertiseProbe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "advertise",
        abstract: "Advertise 0xFEF3 service data; print CAPABILITIES, REGISTERED n, UNREGISTERED, DAEMON GONE/BACK.")

    @OptionGroup var common: CommonProbeOptions

    @Option(help: "The 0xFEF3 service data, hex.")
    var serviceData: String

    @Option(help: "Service data to advertise once bluetoothd has gone away (re-registered when it is back), hex.")
    var afterRestart: String?

    @Flag(help: "Use extended advertising (SecondaryChannel 1M) when the controller supports it.")
    var extended = false

    @Option(help: "Stop after this many seconds (default: run until killed).")
    var seconds: Double?

    func run() async throws {
        let adapter = try await common.open()
        let advertiser = BlueZAdvertiser(adapter: adapter)
        let capabilities = try await advertiser.capabilities()
        say("CAPABILITIES instances=\(capabilities.supportedInstances) extended=\(capabilities.supportsExtendedAdvertising) secondary=\(capabilities.secondaryChannels.joined(separator: ",")) includes=\(capabilities.supportedIncludes.joined(separator: ",")) features=\(capabilities.features?.joined(separator: ",") ?? "-")")
        let useExtended = extended && capabilities.supportsExtendedAdvertising
        let adapterEvents = await adapter.events()
        let events = advertiser.events
        let data = try parseHex(serviceData)
        let later = try afterRestart.map(parseHex)
        let watcher = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in adapterEvents {
                        switch event {
                        case .daemonGone:
                            say("DAEMON GONE")
                            if let later { try? await advertiser.update(.nearby(later, extended: useExtended)) }
                        case .daemonBack: say("DAEMON BACK")
                        case .available(let state): say("ADAPTER \(state.name) \(state.address) powered=\(state.powered)")
                        case .removed: say("ADAPTER REMOVED")
                        case .powered(let on): say("POWERED \(on)")
                        case .interfacesAdded: break
                        }
                    }
                }
                group.addTask {
                    for await event in events {
                        switch event {
                        case .registered(let path, let count): say("REGISTERED \(count) \(path)")
                        case .unregistered(let reason): say("UNREGISTERED \(reason)")
                        case .failed(let reason): say("FAILED \(reason)")
                        }
                    }
                }
            }
        }
        try await advertiser.start(.nearby(data, extended: useExtended))
        if let seconds {
            try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        } else {
            while !Task.isCancelled { try await Task.sleep(for: .seconds(3600)) }
        }
        await advertiser.stop()
        watcher.cancel()
        say("STOPPED")
    }
}

struct ScanProbe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Scan for 0xFEF3 service data; print REPORT address type hex rssi; exit 0 once --expect is seen.")

    @OptionGroup var common: CommonProbeOptions

    @Option(help: "Exit successfully once this 0xFEF3 service data (hex) is reported.")
    var expect: String?

    @Option(help: "Give up (exit 1) after this many seconds.")
    var timeout: Double = 30

    func run() async throws {
        let adapter = try await common.open()
        let scanner = BlueZScanner(adapter: adapter)
        let expected = try expect.map(parseHex)
        let uuid = BlueZ.uuid(0xFEF3)
        let reports = try await scanner.start(serviceDataUUIDs: [uuid])
        say("SCANNING")
        let found = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                var count = 0
                for await report in reports {
                    let data = report.serviceData(for: 0xFEF3) ?? []
                    count += 1
                    if count <= 20 || data == expected {
                        say("REPORT \(report.address) \(report.addressType) \(hex(data)) rssi=\(report.rssi.map(String.init) ?? "-")")
                    }
                    if let expected, data == expected { return true }
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        await scanner.stop()
        if expected != nil {
            say(found ? "FOUND" : "NOT FOUND")
            if !found { throw ExitCode(1) }
        }
    }
}
