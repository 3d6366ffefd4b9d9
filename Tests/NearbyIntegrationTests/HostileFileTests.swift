import Foundation
import NearbyTestSupport
import NearbyWire
import Testing

extension WiFiLANIntegration {
    /// A peer that completes the real handshake with a `nearby advertise` process and then sends hostile payloads:
    /// names that climb out of the receive directory, names a planted symbolic link sits on, BYTES payloads of
    /// impossible sizes. The advertiser process must survive, write nothing outside its receive directory, and
    /// still receive from the next peer.
    @Suite("Hostile file and payload peers", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct HostileFileTests {
        /// `nearby advertise --accept` receiving into `inbox`, with `outside/target` and symbolic links to it planted.
        private struct Setup {
            let advertiser: CLIProcess
            let port: Int
            let inbox: URL
            let outside: URL

            init(_ scratch: Scratch) async throws {
                inbox = try scratch.directory("inbox")
                outside = try scratch.directory("outside")
                try Data("precious".utf8).write(to: outside.appendingPathComponent("target"))
                let manager = FileManager.default
                try manager.createSymbolicLink(
                    atPath: inbox.appendingPathComponent("planted.txt").path,
                    withDestinationPath: outside.appendingPathComponent("target").path)
                try manager.createSymbolicLink(
                    atPath: inbox.appendingPathComponent("linkdir").path, withDestinationPath: outside.path)
                advertiser = try scratch.launchCLI("advertiser", [
                    "advertise", "--service-id", IntegrationEnvironment.uniqueServiceID("hostile-files"),
                    "--name", "target", "--accept", "--no-upgrade", "--receive-dir", inbox.path, "--json",
                ])
                let advertising = try await advertiser.waitForEvent("advertising")
                port = Int(try #require(advertising.int("port"), "\(advertising)"))
            }

            /// `outside` holds exactly `target` with its original contents, and the scratch root nothing new.
            func expectOutsideUntouched(_ scratch: Scratch) throws {
                #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["target"])
                #expect(try Data(contentsOf: outside.appendingPathComponent("target")) == Data("precious".utf8))
                let root = try FileManager.default.contentsOfDirectory(atPath: scratch.root.path)
                #expect(root.filter { !$0.hasSuffix(".stderr") }.sorted() == ["inbox", "outside"], "\(root)")
            }

            /// A good peer still gets a file through, and it lands in the inbox.
            func expectStillReceives(id: Int64) async throws {
                let peer = try await HostilePeer.connect(port: port, endpointID: "G00D")
                defer { peer.close() }
                try peer.sendFile(id: id, name: "ok-\(id).txt", folder: nil, contents: Array("fine".utf8))
                let received = try await advertiser.waitForEvent("payload_received") { $0.int("payload_id") == id }
                let path = try #require(received.string("path"))
                #expect(path.hasPrefix(inbox.resolvingSymlinksInPath().path + "/") || path.hasPrefix(inbox.path + "/"))
                #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("fine".utf8))
                #expect(advertiser.isRunning)
            }
        }

        @Test("File names and folders that climb out are dropped as violations; nothing lands outside")
        func climbingNames() async throws {
            try await withScratch(timeout: 120, "hostile file names") { scratch in
                let setup = try await Setup(scratch)
                for (index, (name, folder)) in [("../\u{301}x", nil), ("x", "../../"), ("y", "..\u{301}/..")].enumerated() {
                    let peer = try await HostilePeer.connect(port: setup.port, endpointID: "EV\(index)L")
                    defer { peer.close() }
                    try peer.sendFile(id: 100 + Int64(index), name: name, folder: folder, contents: Array("evil".utf8))
                    #expect(try await peer.client.waitForClose(timeout: 20), "the advertiser kept a violating peer")
                }
                try setup.expectOutsideUntouched(scratch)
                try await setup.expectStillReceives(id: 900)
                #expect(!setup.advertiser.events.contains { $0.event == "payload_received" && $0.int("payload_id") ?? 0 < 900 })
            }
        }

        @Test("A planted symbolic link (final name or folder) fails that file only; its target is untouched")
        func plantedSymlinks() async throws {
            try await withScratch(timeout: 120, "planted symlinks") { scratch in
                let setup = try await Setup(scratch)
                let peer = try await HostilePeer.connect(port: setup.port)
                defer { peer.close() }
                try peer.sendFile(id: 201, name: "planted.txt", folder: nil, contents: Array("evil".utf8))
                try peer.sendFile(id: 202, name: "x.txt", folder: "linkdir", contents: Array("evil".utf8))
                try peer.sendFile(id: 203, name: "y.txt", folder: "linkdir/deeper", contents: Array("evil".utf8))
                for id in Int64(201)...203 {
                    try await setup.advertiser.waitForEvent("transfer_update") {
                        $0.int("payload_id") == id && $0.string("status") == "failure"
                    }
                }
                // Same connection, a good file: the endpoint was not dropped.
                try peer.sendFile(id: 204, name: "fine.txt", folder: "sub", contents: Array("fine".utf8))
                try await setup.advertiser.waitForEvent("payload_received") { $0.int("payload_id") == 204 }
                try setup.expectOutsideUntouched(scratch)
                let inbox = try FileManager.default.subpathsOfDirectory(atPath: setup.inbox.path).sorted()
                #expect(inbox == ["linkdir", "planted.txt", "sub", "sub/fine.txt"], "\(inbox)")
            }
        }

        @Test("BYTES payloads of size -1 or 2 MB drop that peer; the advertiser survives")
        func impossibleBytesPayloads() async throws {
            try await withScratch(timeout: 120, "hostile bytes payloads") { scratch in
                let setup = try await Setup(scratch)
                for (index, total) in [Int64(-1), 2_000_000].enumerated() {
                    let peer = try await HostilePeer.connect(port: setup.port, endpointID: "BY\(index)T")
                    defer { peer.close() }
                    let header = OfflineFrames.payloadHeader(id: 300 + Int64(index), type: .bytes, totalSize: total)
                    // The old code buffered a BYTES payload of size -1 without limit; the first chunk is refused now.
                    var offset: Int64 = 0
                    var closed = false
                    for index in 0..<4 where !closed {
                        do {
                            try peer.send(OfflineFrames.payloadData(
                                header: header, offset: offset, body: Data(count: 65_536), index: Int32(index), isLast: false))
                        } catch {
                            closed = true  // the advertiser already hung up
                        }
                        offset += 65_536
                    }
                    #expect(try await peer.client.waitForClose(timeout: 20), "the advertiser kept a peer announcing \(total)")
                    try await setup.advertiser.waitForEvent("disconnected") { $0.string("endpoint_id") == "BY\(index)T" }
                }
                #expect(setup.advertiser.isRunning)
                #expect(!setup.advertiser.events.contains { $0.event == "payload_received" && $0.string("type") == "bytes" })
                try setup.expectOutsideUntouched(scratch)
                try await setup.expectStillReceives(id: 901)
            }
        }

        @Test("One incoming payload more than the cap (64 open at once) drops that peer with a clear error")
        func tooManyOpenPayloads() async throws {
            try await withScratch(timeout: 120, "too many open payloads") { scratch in
                let setup = try await Setup(scratch)
                let peer = try await HostilePeer.connect(port: setup.port, endpointID: "MANY")
                defer { peer.close() }
                for id in Int64(1)...65 {
                    let header = OfflineFrames.payloadHeader(id: 400 + id, type: .stream, totalSize: -1)
                    try? peer.send(OfflineFrames.payloadData(header: header, offset: 0, body: Data([1]), index: 0, isLast: false))
                }
                #expect(try await peer.client.waitForClose(timeout: 20), "the advertiser kept a peer with 65 open payloads")
                let dropped = try await setup.advertiser.waitForEvent("disconnected") { $0.string("endpoint_id") == "MANY" }
                #expect(dropped.string("error")?.contains("64 incoming payloads at once") == true, "\(dropped)")
                try await setup.expectStillReceives(id: 902)
            }
        }

        @Test("--min-free-space beyond the receive directory's free space stops advertise at start, saying why")
        func cliMinFreeSpaceCheckedAtStart() async throws {
            try await withScratch(timeout: 60, "CLI min free space at start") { scratch in
                let inbox = try scratch.directory("inbox")
                let advertiser = try scratch.launchCLI("advertiser", [
                    "advertise", "--service-id", IntegrationEnvironment.uniqueServiceID("limits"), "--accept",
                    "--receive-dir", inbox.path, "--json", "--min-free-space", "\(Int64.max)",
                ])
                #expect(try await advertiser.waitForExit(timeout: 30) == 1, "\(advertiser.diagnostics)")
                #expect(advertiser.diagnostics.contains("must stay free (--min-free-space)"), "\(advertiser.diagnostics)")
                #expect(!advertiser.events.contains { $0.event == "advertising" })
            }
        }

        // `--min-free-space` is checked at start by the CLI (above); the engine's check during a transfer is covered
        // by EnginePayloadLimitsTests.
        @Test("--max-receive-bytes fails an over-limit file on both sides and deletes it",
              arguments: [["--max-receive-bytes", "100000"]])
        func cliReceiveLimits(_ flags: [String]) async throws {
            try await withScratch(timeout: 120, "CLI receive limits \(flags)") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("limits")
                let inbox = try scratch.directory("inbox")
                // Sparse 1 GiB: the sender could only report success after all of it, long after PAYLOAD_ERROR.
                let file = try scratch.sparseFile("huge.bin", size: 1 << 30)
                let advertiser = try scratch.launchCLI("advertiser", [
                    "advertise", "--service-id", serviceID, "--name", "limited", "--accept", "--no-upgrade",
                    "--receive-dir", inbox.path, "--json",
                ] + flags)
                _ = try await advertiser.waitForEvent("advertising")
                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--to-name", "limited", "--name", "sender", "--accept",
                    "--bytes", "hi", "--file", file.path, "--json",
                ])
                #expect(try await sender.waitForExit(timeout: 90) == 1, "\(sender.diagnostics)")
                try await advertiser.waitForEvent("payload_received") { $0.string("type") == "bytes" }
                try await advertiser.waitForEvent("transfer_update") {
                    $0.string("status") == "failure" && $0.int("total") == Int64(1 << 30)
                }
                #expect(!sender.events.contains { $0.event == "payload_sent" && $0.string("type") == "file" })
                #expect(try FileManager.default.subpathsOfDirectory(atPath: inbox.path) == [], "\(advertiser.diagnostics)")
                #expect(advertiser.isRunning)
            }
        }
    }
}
