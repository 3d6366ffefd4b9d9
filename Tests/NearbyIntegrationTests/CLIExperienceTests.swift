import Foundation
import NearbyTestSupport
import NearbyWire
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension WiFiLANIntegration {
    /// `nearby receive` and `nearby send PATH…` as a person runs them: no service ID, no names, progress on a
    /// terminal that fits its width, standard input and output as streams, folders.
    @Suite("nearby send / receive: defaults, progress, pipes, folders")
    struct CLIExperienceTests {
        /// Starts `nearby receive … --json` (stdout to a file) and waits for it to advertise.
        static func receiver(
            _ scratch: Scratch, serviceID: String, directory: URL, _ extra: [String] = [], eventsOnStderr: Bool = false
        ) async throws -> WiredCLI {
            let stdout = scratch.root.appendingPathComponent("receiver-\(UUID().uuidString.prefix(4)).out").path
            let receiver = try scratch.wired(
                ["receive", "--service-id", serviceID, "--accept", "--receive-dir", directory.path, "--json"] + extra,
                stdout: .file(stdout))
            _ = try await eventually(within: 30, "the receiver to advertise\n\(receiver.diagnostics)") {
                receiver.events(fromStderr: eventsOnStderr).contains { $0.event == "advertising" } ? true : nil
            }
            return receiver
        }

        /// The pieces of terminal output between line feeds and carriage returns, without escape sequences.
        static func screenLines(_ text: String) -> [String] {
            let withoutEscapes = text.replacingOccurrences(
                of: "\u{1B}\\[[0-9;]*[A-Za-z]", with: "", options: .regularExpression)
            return withoutEscapes.components(separatedBy: CharacterSet(charactersIn: "\r\n")).filter { !$0.isEmpty }
        }

        @Test("send FILE on a 60-column terminal: one line per transfer that fits, no bar for a message, one summary with the SHA-256")
        func progressOnATerminal() async throws {
            try await withScratch(timeout: 240, "progress on a terminal") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("pty")
                let inbox = try scratch.directory("inbox")
                let file = try scratch.randomFile("big-holiday-pictures-archive.bin", size: 24 * 1024 * 1024)
                let digest = try await sha256Hex(of: file)
                let receiver = try await Self.receiver(scratch, serviceID: serviceID, directory: inbox)

                // No target and no name: the sender finds the one receiver; its own request needs no --accept.
                let sender = try scratch.wired(
                    ["send", file.path, "--bytes", "hello", "--service-id", serviceID],
                    stdout: .terminal(columns: 60, rows: 24))
                #expect(try await sender.waitForExit(within: 180) == 0, "\(sender.diagnostics)")
                try await sender.waitForTerminalEnd()
                let screen = sender.terminalText

                let lines = Self.screenLines(screen)
                let bars = lines.filter { $0.contains("[") && $0.contains("%") }
                // Progress lines are redrawn in place, so they must never wrap (summaries may).
                for line in lines where line.contains("%") || line.contains("ETA") {
                    #expect(line.unicodeScalars.count <= 59, "wider than the terminal: \(line)")
                }
                #expect(!bars.isEmpty, "no progress line: \(screen)")
                #expect(bars.allSatisfy { $0.hasPrefix("big-holi") && $0.contains("…") }, "\(bars)")
                #expect(bars.contains { $0.contains("MB/s") }, "\(bars)")
                #expect(!lines.contains { $0.hasPrefix("message  [") }, "a bar for an 5-byte message")
                #expect(screen.contains("\u{1B}[1A\u{1B}[J"), "the line is never redrawn in place")
                // Each payload is reported once, the file with its size, time, speed and digest.
                #expect(lines.filter { $0.hasPrefix("sent big-holiday-pictures-archive.bin to ") }.count == 1, "\(lines)")
                let summary = try #require(lines.first { $0.hasPrefix("sent big-holiday-pictures-archive.bin") })
                #expect(summary.contains("25.2 MB in ") && summary.contains("MB/s") && summary.hasSuffix("sha256 \(digest)"))
                #expect(lines.filter { $0.hasPrefix("sent message to ") }.count == 1, "\(lines)")
                #expect(!screen.contains("payload "), "a payload ID in the human output: \(screen)")

                // The receiver exits once the sender is gone; the file is whole and has the usual mode.
                #expect(try await receiver.waitForExit(within: 30) == 0, "\(receiver.diagnostics)")
                let received = inbox.appendingPathComponent(file.lastPathComponent)
                #expect(try await sha256Hex(of: received) == digest)
                let mode = (try FileManager.default.attributesOfItem(atPath: received.path)[.posixPermissions] as? Int) ?? 0
                #expect(mode == 0o666 & ~Self.umask(), "mode \(String(mode, radix: 8))")
                let events = receiver.events()
                let file_ = try #require(events.first { $0.event == "payload_received" && $0.string("type") == "file" })
                #expect(file_.string("payload_id")?.allSatisfy(\.isNumber) == true, "payload_id is not a string: \(file_)")
                let bytes = try #require(events.first { $0.event == "payload_received" && $0.string("type") == "bytes" })
                #expect(bytes.string("text") == "hello")
            }
        }

        /// The process's umask, from /proc (asking umask(2) would change it for a moment).
        static func umask() -> Int {
            let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") } ?? "Umask: 0022"
            return Int(line.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) ?? 0o022
        }

        @Test("output to a file: no escape sequences, a start line, one summary")
        func progressNotOnATerminal() async throws {
            try await withScratch(timeout: 180, "progress to a file") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("pipe-out")
                let file = try scratch.randomFile("data.bin", size: 3 * 1024 * 1024)
                let receiver = try await Self.receiver(scratch, serviceID: serviceID, directory: try scratch.directory("in"))
                let out = scratch.root.appendingPathComponent("sender.out").path
                let sender = try scratch.wired(["send", file.path, "--service-id", serviceID], stdout: .file(out))
                #expect(try await sender.waitForExit(within: 120) == 0, "\(sender.diagnostics)")
                let text = sender.stdoutText
                #expect(!text.contains("\u{1B}") && !text.contains("\r"), "\(text)")
                #expect(text.contains("sending data.bin (3.1 MB) to "), "\(text)")
                #expect(text.components(separatedBy: "sent data.bin to ").count == 2, "\(text)")
                #expect(try await receiver.waitForExit(within: 30) == 0, "\(receiver.diagnostics)")
            }
        }

        @Test("standard input to a receiver's standard output, and a stream to a file")
        func pipes() async throws {
            try await withScratch(timeout: 180, "pipes") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("pipes")
                let source = try scratch.randomFile("tarball.tar", size: 3 * 1024 * 1024 + 17)
                let digest = try await sha256Hex(of: source)

                // tar c dir | nearby send -   …   nearby receive --stream-to - > out.tar
                let receiver = try await Self.receiver(
                    scratch, serviceID: serviceID, directory: try scratch.directory("in"), ["--stream-to", "-"],
                    eventsOnStderr: true)
                let sender = try scratch.wired(
                    ["send", "-", "--bytes", "ünïcode ✓", "--service-id", serviceID, "--json"], stdin: source.path,
                    stdout: .file(scratch.root.appendingPathComponent("sender.jsonl").path))
                #expect(try await sender.waitForExit(within: 120) == 0, "\(sender.diagnostics)")
                #expect(try await receiver.waitForExit(within: 30) == 0, "\(receiver.diagnostics)")
                let output = try #require(receiver.stdoutPath)
                #expect(try await sha256Hex(of: URL(fileURLWithPath: output)) == digest)
                let events = receiver.events(fromStderr: true)
                let stream = try #require(events.first { $0.event == "payload_received" && $0.string("type") == "stream" })
                #expect(stream.string("sha256") == digest)
                let text = try #require(events.first { $0.event == "payload_received" && $0.string("type") == "bytes" })
                #expect(text.string("text") == "ünïcode ✓", "\(text)")
                let sent = sender.events().filter { $0.event == "payload_sent" }
                #expect(sent.contains { $0.string("type") == "stream" && $0.string("sha256") == digest }, "\(sent)")

                // --stream-to FILE: written beside its final name and moved there when whole.
                let target = scratch.root.appendingPathComponent("streamed.bin")
                let second = try await Self.receiver(
                    scratch, serviceID: serviceID, directory: try scratch.directory("in2"), ["--stream-to", target.path])
                let again = try scratch.wired(
                    ["send", "--stream", source.path, "--service-id", serviceID], stdout: .file(scratch.root.appendingPathComponent("s2.out").path))
                #expect(try await again.waitForExit(within: 120) == 0, "\(again.diagnostics)")
                #expect(try await second.waitForExit(within: 30) == 0, "\(second.diagnostics)")
                #expect(try await sha256Hex(of: target) == digest)
                #expect(second.events().first { $0.event == "payload_received" }?.string("path") == target.path)
                #expect(!directoryEntries(scratch.root).contains { $0.hasSuffix("nearby-partial") })
            }
        }

        @Test("a folder arrives as a tree of files under the receive directory; links are not sent")
        func folders() async throws {
            try await withScratch(timeout: 180, "folders") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("folders")
                let tree = try scratch.directory("photos")
                let files = ["a.txt": 10, "2024/b.bin": 70_000, "2024/summer/c.jpg": 200_000, "2024/summer/.hidden": 3]
                var digests: [String: String] = [:]
                for (path, size) in files {
                    let url = tree.appendingPathComponent(path)
                    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                    let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ path.count) }
                    try Data(bytes).write(to: url)
                    digests[path] = try await sha256Hex(of: url)
                }
                try FileManager.default.createSymbolicLink(atPath: tree.appendingPathComponent("link").path, withDestinationPath: "/etc/passwd")
                let inbox = try scratch.directory("inbox")
                let receiver = try await Self.receiver(scratch, serviceID: serviceID, directory: inbox)
                let sender = try scratch.wired(
                    ["send", tree.path, "--service-id", serviceID, "--json"],
                    stdout: .file(scratch.root.appendingPathComponent("sender.jsonl").path))
                #expect(try await sender.waitForExit(within: 120) == 0, "\(sender.diagnostics)")
                #expect(sender.stderr.contains("not sending 1 symbolic link(s) or special file(s) under"), "\(sender.stderr)")
                #expect(try await receiver.waitForExit(within: 30) == 0, "\(receiver.diagnostics)")
                for (path, digest) in digests {
                    let received = inbox.appendingPathComponent("photos/" + path)
                    #expect(try await sha256Hex(of: received) == digest, "\(path)")
                }
                #expect(!FileManager.default.fileExists(atPath: inbox.appendingPathComponent("photos/link").path))
                let names = Set(receiver.events().filter { $0.event == "payload_received" }.compactMap { $0.string("name") })
                #expect(names == Set(files.keys.map { "photos/" + $0 }), "\(names)")
                let sentNames = Set(sender.events().filter { $0.event == "payload_sent" }.compactMap { $0.string("name") })
                #expect(sentNames == names)
            }
        }
    }
}
