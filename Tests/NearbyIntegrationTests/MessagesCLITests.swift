import Foundation
import NearbyWire
import Testing

extension WiFiLANIntegration {
    /// `nearby publish` and `nearby subscribe` in separate processes (Nearby Messages over Wi-Fi LAN).
    @Suite("nearby publish ↔ nearby subscribe", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct MessagesCLITests {
        @Test("found with content, namespace and type; a filter excludes the rest; 50 KB through a connection; lost on exit")
        func publishAndSubscribe() async throws {
            try await withScratch(timeout: 150, "CLI publish/subscribe") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("msg")
                let small = try scratch.launchCLI("publish-small", [
                    "publish", "--service-id", serviceID, "--message", "hello nearby", "--namespace", "greetings",
                    "--type", "text", "--json",
                ])
                let other = try scratch.launchCLI("publish-other", [
                    "publish", "--service-id", serviceID, "--message", "not for you", "--namespace", "other",
                    "--type", "text", "--json",
                ])
                let large = String(repeating: "0123456789", count: 5_000)  // 50,000 bytes
                let big = try scratch.launchCLI("publish-large", [
                    "publish", "--service-id", serviceID, "--message", large, "--namespace", "greetings",
                    "--type", "blob", "--json",
                ])
                for publisher in [small, other, big] { try await publisher.waitForEvent("publishing") }

                let filtered = try scratch.launchCLI("subscribe-filtered", [
                    "subscribe", "--service-id", serviceID, "--namespace", "greetings", "--type", "text", "--json",
                ])
                let everything = try scratch.launchCLI("subscribe-all", [
                    "subscribe", "--service-id", serviceID, "--json",
                ])

                let found = try await filtered.waitForEvent("message_found", timeout: 60)
                #expect(found.string("message") == "hello nearby")
                #expect(found.string("message_hex") == Hex.encode(Array("hello nearby".utf8)))
                #expect(found.string("namespace") == "greetings")
                #expect(found.string("type") == "text")

                let fetched = try await everything.waitForEvent("message_found", timeout: 90) { $0.string("type") == "blob" }
                #expect(fetched.int("size") == 50_000)
                #expect(fetched.string("message") == large)
                try await everything.waitForEvent("message_found", timeout: 60) { $0.string("namespace") == "other" }

                // By now the filtered subscriber has seen all three advertisements; only one passed.
                try await Task.sleep(for: .seconds(2))
                #expect(filtered.events("message_found").count == 1, "\(filtered.diagnostics)")

                small.signal(SIGTERM)
                #expect(try await small.waitForExit() == 0, "\(small.diagnostics)")
                let lost = try await filtered.waitForEvent("message_lost", timeout: 60)
                #expect(lost.string("message") == "hello nearby")
                #expect(lost.string("namespace") == "greetings")
                #expect(big.isRunning && other.isRunning)
            }
        }

        @Test("a message over 102,400 bytes and a '*' in the namespace or type are clear errors (exit 1)")
        func invalidMessages() async throws {
            try await withScratch(timeout: 60, "CLI publish errors") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("msg-err")
                let tooLarge = try scratch.launchCLI("too-large", [
                    "publish", "--service-id", serviceID, "--message", String(repeating: "x", count: 102_401),
                ])
                #expect(try await tooLarge.waitForExit() == 1)
                #expect(tooLarge.diagnostics.contains("102401 bytes; the maximum is 102400 bytes"), "\(tooLarge.diagnostics)")
                for arguments in [["--namespace", "a*"], ["--type", "*"]] {
                    let star = try scratch.launchCLI("star", ["publish", "--service-id", serviceID, "--message", "x"] + arguments)
                    #expect(try await star.waitForExit() == 1)
                    #expect(star.diagnostics.contains("must not contain '*'"), "\(star.diagnostics)")
                }
            }
        }

        @Test("without avahi-daemon, nearby subscribe reports it through the mDNS handler and exits 1")
        func subscribeWithoutAvahi() async throws {
            try await withScratch(timeout: 60, "CLI subscribe without avahi") { scratch in
                let process = Process()
                process.executableURL = try IntegrationEnvironment.nearbyExecutable()
                process.arguments = ["subscribe", "--service-id", "no-avahi", "--timeout", "20", "--json"]
                var environment = ProcessInfo.processInfo.environment
                environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/swift-nearby-test/bus.sock"
                process.environment = environment
                let stderrURL = scratch.root.appendingPathComponent("no-avahi.stderr")
                _ = FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
                process.standardError = try FileHandle(forWritingTo: stderrURL)
                process.standardOutput = FileHandle.nullDevice
                process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
                try process.run()
                let deadline = Date().addingTimeInterval(30)
                while process.isRunning && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                let stderr = (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? ""
                #expect(process.terminationStatus == 1, "\(stderr)")
                #expect(stderr.contains("avahi-daemon is not running"), "\(stderr)")
            }
        }

        @Test("nearby beacons --replay: found with every field, RSSI and distance; lost after the unseen time")
        func beaconsReplay() async throws {
            try await withScratch(timeout: 60, "CLI beacons replay") { scratch in
                let file = scratch.root.appendingPathComponent("reports.txt")
                try """
                    # address rssi advertising-data
                    AA:AA:AA:AA:AA:01 -59 0201060303AAFE1716AAFE00EE00112233445566778899AABBCCDDEEFF0000
                    AA:AA:AA:AA:AA:02 -65 0201061AFF4C000215011223344556677889 9AABBCCDDEEFF000010002C5
                    AA:AA:AA:AA:AA:01 -60 0201060303AAFE1116AAFE20000BB8FF800000010000002710
                    AA:AA:AA:AA:AA:03 -70 0201060303AAFE0E16AAFE10EB036578616D706C6500
                    """.replacingOccurrences(of: "889 9AA", with: "8899AA").write(to: file, atomically: true, encoding: .utf8)
                let beacons = try scratch.launchCLI("beacons", [
                    "beacons", "--replay", file.path, "--lost-after", "1", "--timeout", "6", "--json",
                ])
                let uid = try await beacons.waitForEvent("beacon_found") { $0.string("kind") == "eddystone-uid" }
                #expect(uid.string("namespace") == "00112233445566778899")
                #expect(uid.string("instance") == "aabbccddeeff")
                #expect(uid.int("tx_power") == -18)
                #expect(uid.int("rssi") == -59)
                #expect(uid.text("distance_m").flatMap(Double.init) == 1)
                let iBeacon = try await beacons.waitForEvent("beacon_found") { $0.string("kind") == "ibeacon" }
                #expect(iBeacon.string("uuid") == "01122334-4556-6778-899a-abbccddeeff0")
                #expect(iBeacon.int("major") == 1 && iBeacon.int("minor") == 2 && iBeacon.int("tx_power") == -59)
                #expect(iBeacon.text("distance_m").flatMap(Double.init) == 2)
                let tlm = try await beacons.waitForEvent("beacon_found") { $0.string("kind") == "eddystone-tlm" }
                #expect(tlm.int("battery_mv") == 3000)
                #expect(tlm.text("temperature_c") == "-0.5")
                #expect(tlm.int("adv_count") == 256)
                #expect(tlm.int("uptime_s") == 1000)
                let url = try await beacons.waitForEvent("beacon_found") { $0.string("kind") == "eddystone-url" }
                #expect(url.string("url") == "https://example.com/")
                for kind in ["eddystone-uid", "ibeacon", "eddystone-tlm", "eddystone-url"] {
                    try await beacons.waitForEvent("beacon_lost", timeout: 20) { $0.string("kind") == kind }
                }
                #expect(try await beacons.waitForExit() == 0, "\(beacons.diagnostics)")
            }
        }

        @Test("nearby beacons with a controller that cannot be opened fails with a clear reason; without --hci and without bluetoothd it says to give --hci")
        func beaconsUnavailable() async throws {
            try await withScratch(timeout: 30, "CLI beacons") { scratch in
                let beacons = try scratch.launchCLI("beacons", ["beacons", "--hci", "tcp:127.0.0.1:1", "--timeout", "5"])
                #expect(try await beacons.waitForExit() == 1)
                #expect(beacons.diagnostics.contains("cannot open the Bluetooth controller at tcp:127.0.0.1:1"), "\(beacons.diagnostics)")
                // The test network's system bus has no bluetoothd, so the default radio (BlueZ) is not there.
                let usage = try scratch.launchCLI("beacons-usage", ["beacons", "--timeout", "1"])
                #expect(try await usage.waitForExit() == 1)
                #expect(usage.diagnostics.contains("--hci"), "\(usage.diagnostics)")
            }
        }
    }
}
