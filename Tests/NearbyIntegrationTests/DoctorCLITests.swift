import Foundation
import Testing

extension WiFiLANIntegration {
    /// `nearby doctor` in the test network: everything that is there works; with avahi-daemon stopped (a bus without
    /// it), a firewall that drops mDNS (a fake `nft`) and Bluetooth soft-blocked (a fake sysfs), each problem is a
    /// failure with its fix.
    @Suite("nearby doctor")
    struct DoctorCLITests {
        static func checks(_ output: String) -> [String: JSONEvent] {
            var checks: [String: JSONEvent] = [:]
            for line in output.split(separator: "\n") {
                guard let event = JSONEvent(line: String(line)), event.event == "check", let name = event.string("check")
                else { continue }
                checks[name] = event
            }
            return checks
        }

        @Test("in the test network: avahi runs and our own test service is found")
        func healthy() async throws {
            try await withScratch(timeout: 90, "doctor, healthy") { scratch in
                let result = try await CLIErrorTests.run(scratch, ["doctor", "--json"])
                let checks = Self.checks(result.stdout)
                #expect(checks["avahi"]?.string("status") == "ok", "\(result.stdout)")
                #expect(checks["mdns"]?.string("status") == "ok", "\(result.stdout)")
                #expect(result.stdout.contains("\"lo: seen (127.0.0.1)\""), "\(result.stdout)")
                #expect(checks["config"]?.string("status") == "ok", "\(result.stdout)")
                let expected: Set<String> = [
                    "config", "receive-dir", "avahi", "mdns", "interfaces", "firewall", "bluez", "rfkill",
                    "hci-permissions", "audio",
                ]
                #expect(Set(checks.keys) == expected, "\(result.stdout)")
                let summary = result.stdout.split(separator: "\n").compactMap { JSONEvent(line: String($0)) }
                    .first { $0.event == "doctor_summary" }
                #expect(summary?.int("failures") == 0, "\(result.stdout)")
                #expect(result.status == 0, "\(result)")

                let human = try await CLIErrorTests.run(scratch, ["doctor"])
                #expect(human.stdout.contains("[ ok ] mdns            published and found our own test service"), "\(human.stdout)")
                #expect(human.stdout.contains("\n         lo: seen (127.0.0.1)\n"), "\(human.stdout)")
                #expect(!human.stdout.contains("\\n"), "escaped line breaks: \(human.stdout)")
            }
        }

        @Test("avahi-daemon stopped, a firewall dropping mDNS, Bluetooth soft-blocked: each a failure with its fix")
        func piecesMissing() async throws {
            try await withScratch(timeout: 90, "doctor, pieces missing") { scratch in
                let bus = try await BusWithoutAvahi(in: scratch.root)
                defer { bus.stop() }
                let bin = try scratch.directory("fake-bin")
                let nft = bin.appendingPathComponent("nft")
                try """
                    #!/bin/sh
                    cat <<'EOF'
                    table inet filter {
                    \tchain input {
                    \t\ttype filter hook input priority filter; policy drop;
                    \t\ttcp dport 22 accept
                    \t}
                    }
                    EOF
                    """.write(to: nft, atomically: true, encoding: .utf8)
                chmod(nft.path, 0o755)
                let sysfs = try scratch.directory("sys")
                let rfkill = sysfs.appendingPathComponent("class/rfkill/rfkill0")
                try FileManager.default.createDirectory(at: rfkill, withIntermediateDirectories: true)
                for (name, value) in ["type": "bluetooth", "name": "hci0", "soft": "1", "hard": "0"] {
                    try "\(value)\n".write(to: rfkill.appendingPathComponent(name), atomically: true, encoding: .utf8)
                }
                let environment = [
                    "DBUS_SYSTEM_BUS_ADDRESS": bus.address, "NEARBY_DOCTOR_SYSFS": sysfs.path,
                    "PATH": bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
                ]
                let json = try await CLIErrorTests.run(scratch, ["doctor", "--json", "--timeout", "1"], environment: environment)
                #expect(json.status == 1, "\(json)")
                let checks = Self.checks(json.stdout)
                #expect(checks["avahi"]?.string("status") == "fail", "\(json.stdout)")
                #expect(checks["avahi"]?.string("fix") == "sudo systemctl enable --now avahi-daemon", "\(json.stdout)")
                #expect(checks["mdns"]?.string("status") == "skip")
                #expect(checks["firewall"]?.string("status") == "fail", "\(json.stdout)")
                #expect(checks["firewall"]?.string("fix")?.contains("nft add rule inet filter input udp dport 5353 accept") == true)
                #expect(checks["rfkill"]?.string("status") == "fail", "\(json.stdout)")
                #expect(checks["rfkill"]?.string("fix") == "rfkill unblock bluetooth")

                // The same, for a person.
                let human = try await CLIErrorTests.run(scratch, ["doctor", "--timeout", "1"], environment: environment)
                #expect(human.status == 1)
                #expect(human.stdout.contains("[FAIL] avahi           avahi-daemon is not running"), "\(human.stdout)")
                #expect(human.stdout.contains("         fix: sudo systemctl enable --now avahi-daemon"), "\(human.stdout)")
                #expect(human.stdout.contains("[FAIL] rfkill          Bluetooth is soft-blocked (hci0)"), "\(human.stdout)")
                #expect(human.stdout.contains("problem(s)"), "\(human.stdout)")

                // No system bus at all.
                let noBus = try await CLIErrorTests.run(
                    scratch, ["doctor", "--json", "--timeout", "1"],
                    environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(scratch.root.path)/no-bus"])
                #expect(Self.checks(noBus.stdout)["avahi"]?.string("summary")?.contains("system bus cannot be reached") == true, "\(noBus.stdout)")
            }
        }
    }
}
