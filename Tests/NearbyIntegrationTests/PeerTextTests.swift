import Foundation
import NearbyConnections
import Testing

/// Peer-chosen names, IDs and messages are printed with control characters and bidirectional overrides escaped.
@Suite("Peer text escaping", .timeLimit(.minutes(5)))
struct PeerTextTests {
    @Test("Terminal escaping: controls, DEL, C1 and bidi overrides become visible escapes; letters stay")
    func terminal() {
        #expect(PeerText.escapedForTerminal("Pixel 8 – Zoë 東京") == "Pixel 8 – Zoë 東京")
        #expect(PeerText.escapedForTerminal("a\u{1B}[2Jb") == "a\\u{1B}[2Jb")
        #expect(PeerText.escapedForTerminal("one\ntwo\r\tthree") == "one\\ntwo\\r\\tthree")
        #expect(PeerText.escapedForTerminal("\u{0}\u{7}\u{7F}\u{80}\u{9B}\u{9F}") == "\\u{0}\\u{7}\\u{7F}\\u{80}\\u{9B}\\u{9F}")
        #expect(PeerText.escapedForTerminal("photo\u{202E}gpj.exe") == "photo\\u{202E}gpj.exe")
        #expect(PeerText.escapedForTerminal("\u{202A}\u{202B}\u{202C}\u{202D}\u{2066}\u{2067}\u{2068}\u{2069}")
            == "\\u{202A}\\u{202B}\\u{202C}\\u{202D}\\u{2066}\\u{2067}\\u{2068}\\u{2069}")
        #expect(PeerText.escapedForTerminal("\u{200E}\u{200F}\u{61C}\u{2028}\u{2029}")
            == "\\u{200E}\\u{200F}\\u{61C}\\u{2028}\\u{2029}")
        // Escaping twice changes nothing more.
        let once = PeerText.escapedForTerminal("x\u{1B}]0;title\u{7}")
        #expect(PeerText.escapedForTerminal(once) == once)
        #expect(!once.unicodeScalars.contains(where: PeerText.isUnsafe))
        // Every scalar of the C0, DEL and C1 ranges is unsafe; the next ones are not.
        for value in UInt32(0)...0x9F where value < 0x20 || value >= 0x7F {
            #expect(PeerText.isUnsafe(Unicode.Scalar(value)!), "U+\(String(value, radix: 16))")
        }
        #expect(!PeerText.isUnsafe(" ") && !PeerText.isUnsafe("~") && !PeerText.isUnsafe("\u{A0}"))
    }

    @Test("JSON escaping: still valid JSON with the same value, no raw unsafe scalar")
    func json() throws {
        let nasty = "evil\u{1B}[2J\nline\u{7F}\u{9B}31m\u{202E}\u{2028}end\"\\/"
        let data = try JSONSerialization.data(withJSONObject: ["name": nasty], options: [.sortedKeys, .withoutEscapingSlashes])
        let text = PeerText.escapingUnsafeScalars(inCompactJSON: try #require(String(data: data, encoding: .utf8)))
        #expect(!text.unicodeScalars.contains(where: PeerText.isUnsafe), "\(text)")
        #expect(text.contains("\\u001b") && text.contains("\\u202e") && text.contains("\\u009b"), "\(text)")
        let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String]
        #expect(parsed?["name"] == nasty)
    }
}

extension WiFiLANIntegration {
    /// `nearby discover` prints advertisers' names; the names are theirs to choose.
    @Suite("nearby discover with hostile names", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct CLIHostileNameTests {
        @Test("one line per event, no raw ESC or bidi override, the name shown escaped")
        func hostileNames() async throws {
            try await withScratch(timeout: 120, "CLI hostile names") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("names")
                let names = [
                    "evil\u{1B}[2J\nsecond line",
                    "\u{1B}]0;owned\u{7}\u{1B}[31mred\u{202E}gpj.exe",
                ]
                var ids: [String: String] = [:]
                for (index, name) in names.enumerated() {
                    let advertiser = try scratch.launchCLI("advertiser\(index)", [
                        "advertise", "--service-id", serviceID, "--name", name, "--accept", "--json",
                        "--receive-dir", try scratch.directory("received\(index)").path,
                    ])
                    let advertising = try await advertiser.waitForEvent("advertising")
                    ids[name] = try #require(advertising.string("endpoint_id"), "\(advertising)")
                }
                let discover = try scratch.launchCLI("discover", [
                    "discover", "--service-id", serviceID, "--timeout", "8",
                ])
                #expect(try await discover.waitForExit(timeout: 60) == 0, "\(discover.diagnostics)")
                let lines = discover.otherLines
                for line in lines {
                    #expect(line.hasPrefix("found ") || line.hasPrefix("lost "), "stray line \(line.debugDescription)")
                    #expect(!line.unicodeScalars.contains(where: PeerText.isUnsafe), "raw control in \(line.debugDescription)")
                }
                for name in names {
                    let id = try #require(ids[name])
                    let expected = "found \(id) (\(PeerText.escapedForTerminal(name))) over "
                    #expect(lines.contains { $0.hasPrefix(expected) }, "no \(expected.debugDescription) in \(lines)\n\(discover.diagnostics)")
                }
            }
        }
    }
}
