import Foundation
import NearbyTestSupport
import NearbyWire
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension WiFiLANIntegration {
    /// Errors a person can act on: one line naming the path and the cause, exit 2 for usage and 1 at run time, the
    /// receive directory checked at start, the sender told why the receiver failed, who refused, and `discover`
    /// failing every time when avahi-daemon is not there.
    @Suite("nearby: errors")
    struct CLIErrorTests {
        /// Runs `nearby ARGS` to its end; returns its status, stdout and stderr.
        static func run(
            _ scratch: Scratch, _ arguments: [String], environment: [String: String] = [:], within seconds: Double = 60
        ) async throws -> (status: Int32, stdout: String, stderr: String) {
            let process = try scratch.wired(
                arguments, stdout: .file(scratch.root.appendingPathComponent("run-\(UUID().uuidString.prefix(6)).out").path),
                environment: environment)
            let status = try await process.waitForExit(within: seconds)
            return (status, process.stdoutText, process.stderr)
        }

        @Test("usage errors exit 2 naming the path; --version exits 0")
        func usage() async throws {
            try await withScratch(timeout: 60, "usage errors") { scratch in
                let missing = try await Self.run(scratch, ["send", "/no/such/photo.jpg", "--to-name", "x"])
                #expect(missing.status == 2, "\(missing)")
                #expect(missing.stderr.contains("cannot read /no/such/photo.jpg: No such file or directory"), "\(missing.stderr)")
                #expect(!missing.stderr.contains("Error Domain"))

                let config = scratch.root.appendingPathComponent("config.toml")
                try "name = \"box\"\nservce-id = \"x\"\n".write(to: config, atomically: true, encoding: .utf8)
                let broken = try await Self.run(scratch, ["discover", "--timeout", "1"], environment: ["NEARBY_CONFIG": config.path])
                #expect(broken.status == 2, "\(broken)")
                #expect(broken.stderr.contains("\(config.path):2: unknown key servce-id"), "\(broken.stderr)")

                let version = try await Self.run(scratch, ["--version"])
                #expect(version.status == 0)
                #expect(version.stdout.hasPrefix("nearby 0."), "\(version.stdout)")
            }
        }

        @Test("the receive directory is checked at start: not a directory, not writable, no room")
        func receiveDirectory() async throws {
            try await withScratch(timeout: 90, "receive directory") { scratch in
                let file = try scratch.randomFile("plain-file", size: 10)
                let notADirectory = try await Self.run(scratch, ["receive", "--accept", "--receive-dir", file.path])
                #expect(notADirectory.status == 1, "\(notADirectory)")
                #expect(notADirectory.stderr == "nearby: the receive directory \(file.path) is not a directory\n")

                let full = try await Self.run(
                    scratch, ["receive", "--accept", "--receive-dir", scratch.root.path, "--min-free-space", "\(Int64(1) << 60)"])
                #expect(full.status == 1, "\(full)")
                #expect(full.stderr.contains("free, not more than the"), "\(full.stderr)")
                #expect(full.stderr.split(separator: "\n").count == 1, "\(full.stderr)")

                // A read-only mount (root can write anywhere else); the test network has a mount namespace of its own.
                let readOnly = try scratch.directory("read-only")
                guard mount("tmpfs", readOnly.path, "tmpfs", UInt(MS_RDONLY), nil) == 0 else { return }
                defer { umount2(readOnly.path, Int32(MNT_DETACH)) }
                let unwritable = try await Self.run(scratch, ["receive", "--accept", "--receive-dir", readOnly.path])
                #expect(unwritable.status == 1, "\(unwritable)")
                #expect(
                    unwritable.stderr == "nearby: cannot write to the receive directory \(readOnly.path): Read-only file system\n")
            }
        }

        @Test("the sender hears why the receiver failed its file, and who refused a connection")
        func theSenderIsTold() async throws {
            try await withScratch(timeout: 180, "the sender is told") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("why")
                let file = try scratch.randomFile("large.bin", size: 1_000_000)
                let receiver = try await CLIExperienceTests.receiver(
                    scratch, serviceID: serviceID, directory: try scratch.directory("in"), ["--max-receive-bytes", "100000"])
                let sent = try await Self.run(scratch, ["send", file.path, "--service-id", serviceID, "--json"], within: 120)
                #expect(sent.status == 1, "\(sent)")
                #expect(sent.stderr.contains("sending large.bin to "), "\(sent.stderr)")
                #expect(sent.stderr.contains("failed: the receiver failed the payload: file payload"), "\(sent.stderr)")
                #expect(sent.stderr.contains("budget of this connection"), "\(sent.stderr)")
                let failed = sent.stdout.split(separator: "\n").compactMap { JSONEvent(line: String($0)) }
                    .first { $0.event == "payload_failed" }
                #expect(failed?.bool("incoming") == false, "\(sent.stdout)")
                #expect(try await receiver.waitForExit(within: 30) == 1, "\(receiver.diagnostics)")
                #expect(receiver.events().contains { $0.event == "payload_failed" && $0.bool("incoming") == true })
                #expect(receiver.stderr.contains("1 payload(s) failed"), "\(receiver.stderr)")

                // No --accept and no terminal: the receiver refuses, and both say who did.
                let refusing = try scratch.wired(
                    ["receive", "--service-id", serviceID, "--name", "picky", "--receive-dir", scratch.root.path],
                    stdout: .file(scratch.root.appendingPathComponent("picky.out").path))
                _ = try await eventually(within: 30, "the refusing receiver to advertise") {
                    refusing.stdoutText.contains("advertising as picky") ? true : nil
                }
                let refused = try await Self.run(scratch, ["send", file.path, "--service-id", serviceID], within: 120)
                #expect(refused.status == 1, "\(refused)")
                #expect(refused.stderr.contains("picky") && refused.stderr.contains("refused the connection"), "\(refused.stderr)")
                #expect(refusing.stderr.contains("refusing the connection from"), "\(refusing.stderr)")
                #expect(refusing.stderr.contains("no --accept, and no terminal to ask on"), "\(refusing.stderr)")
                #expect(refusing.stdoutText.contains("refused the connection from"), "\(refusing.stdoutText)")
                refusing.stop()
            }
        }

        @Test("discover with avahi-daemon stopped fails every time, with the reason")
        func discoverWithoutAvahi() async throws {
            try await withScratch(timeout: 120, "discover without avahi") { scratch in
                let bus = try await BusWithoutAvahi(in: scratch.root)
                defer { bus.stop() }
                for attempt in 1...5 {
                    let result = try await Self.run(
                        scratch, ["discover", "--service-id", "x", "--medium", "wifi-lan", "--timeout", "3"],
                        environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.address])
                    #expect(result.status == 1, "attempt \(attempt): \(result)")
                    #expect(result.stderr.hasPrefix("nearby: "), "attempt \(attempt): \(result.stderr)")
                    #expect(result.stderr.contains("avahi"), "attempt \(attempt): \(result.stderr)")
                    #expect(result.stderr.split(separator: "\n").count == 1, "attempt \(attempt): \(result.stderr)")
                }
            }
        }
    }
}
