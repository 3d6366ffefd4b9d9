import ArgumentParser
import Foundation
import NearbyConnections

/// `nearby doctor`: checks what nearby needs on this machine and explains each problem with a fix ("why can't I
/// see my other machine?").
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor", abstract: "Check this machine for what nearby needs, and explain how to fix each problem.",
        discussion: """
            Checks avahi-daemon, mDNS (publishing and browsing a test service of our own), network interfaces \
            (multicast, VPN and container links), firewalls (nftables, iptables, firewalld, ufw: run as root to \
            read their rules), Bluetooth (BlueZ adapters, rfkill, the HCI user channel), the sound server of the \
            audio medium, the config file and the receive directory. Exit status 1 when a check fails.
            """)

    @Flag(help: "Print one JSON object per check, then a summary.")
    var json = false

    @Option(help: "Seconds the mDNS self-test waits for its own service.")
    var timeout: Double = 6

    func run() async throws {
        let environment = DoctorEnvironment()
        let output = EventOutput(json: json)
        if !json { output.note("nearby doctor \(NearbyVersion.package): checking what nearby needs on this machine") }
        var checks: [DoctorCheck] = []
        func report(_ check: DoctorCheck) {
            checks.append(check)
            output.event("check", check, humanLines: check.renderedLines())
        }
        report(Self.configCheck())
        report(Self.receiveDirectoryCheck())
        let interfaces = NetworkInterface.all(environment: environment)
        let avahi = await DoctorAvahiCheck.daemon(environment: environment)
        report(avahi)
        report(
            avahi.status == .ok
                ? await DoctorAvahiCheck.selfTest(interfaces: interfaces, timeout: timeout)
                : DoctorAvahiCheck.skipped("avahi-daemon is not reachable"))
        report(DoctorInterfacesCheck.run(interfaces))
        report(DoctorFirewallCheck.run(environment: environment))
        report(await DoctorBluetoothCheck.bluez(environment: environment))
        report(DoctorBluetoothCheck.rfkill(environment: environment))
        report(DoctorBluetoothCheck.hciPermissions(environment: environment))
        report(DoctorAudioCheck.run(environment: environment))

        let summary = DoctorSummary(checks)
        output.event("doctor_summary", summary, human: summary.text)
        if summary.failures > 0 { throw ExitCode(1) }
    }

    /// The config file: absent, read, or broken (where and why).
    static func configCheck() -> DoctorCheck {
        let path = CLIConfig.defaultPath()
        do {
            let config = try CLIConfig.current()
            guard let read = config.path else {
                return DoctorCheck(check: "config", status: .ok, summary: "no config file (\(path)): defaults apply")
            }
            return DoctorCheck(check: "config", status: .ok, summary: "read \(read)")
        } catch {
            return DoctorCheck(
                check: "config", status: .fail, summary: "the config file is broken: \(ErrorText.describe(error))",
                fix: "correct \(path) (docs/CLI.md lists its keys)")
        }
    }

    /// The receive directory of the config file (or the current directory): a writable directory with space.
    static func receiveDirectoryCheck() -> DoctorCheck {
        let configured = (try? CLIConfig.current().string("receive-dir", command: "receive")) ?? nil
        let path = configured.map { NSString(string: $0).expandingTildeInPath } ?? FileManager.default.currentDirectoryPath
        do {
            guard FileManager.default.fileExists(atPath: path) else {
                return DoctorCheck(check: "receive-dir", status: .ok, summary: "\(path) does not exist yet; it is made when needed")
            }
            try ReceiveDirectoryCheck.prepare(URL(fileURLWithPath: path), minimumFreeSpace: ResourceLimits().minimumFreeDiskSpace)
            return DoctorCheck(check: "receive-dir", status: .ok, summary: "\(path) is writable and has free space")
        } catch {
            return DoctorCheck(
                check: "receive-dir", status: .fail, summary: ErrorText.describe(error),
                fix: "receive elsewhere: --receive-dir DIR, or receive-dir in the config file")
        }
    }
}

/// `doctor_summary`: how many checks came out each way.
struct DoctorSummary: Encodable {
    var ok = 0
    var warnings = 0
    var failures = 0
    var skipped = 0

    init(_ checks: [DoctorCheck]) {
        for check in checks {
            switch check.status {
            case .ok: ok += 1
            case .warn: warnings += 1
            case .fail: failures += 1
            case .skip: skipped += 1
            }
        }
    }

    var text: String {
        if failures == 0 && warnings == 0 { return "all \(ok) checks passed (\(skipped) skipped)" }
        return "\(failures) problem(s), \(warnings) warning(s), \(ok) ok, \(skipped) skipped: see the fixes above"
    }
}
