import Foundation
import NearbyTestSupport
import Testing

extension WiFiLANIntegration {
    /// A cluster: 8 `nearby advertise --strategy cluster` processes, each connected to every other one (member i
    /// requests connections to members 0..<i with `--connect`, so no two members ever request each other at the same
    /// moment), each sending bytes and a file to all the others. Heavy-ish (8 processes): keep it out of sanitizer runs.
    @Suite("Cluster of 8 processes", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct ClusterOfEightTests {
        static let memberCount = 8

        @Test("every member connects to the 7 others and receives their bytes and file intact")
        func clusterOfEight() async throws {
            try await withScratch(timeout: 180, "cluster of 8") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("cluster")
                var members: [(name: String, text: String, file: SentFile, process: CLIProcess)] = []
                var ports: [Int] = []
                for index in 0..<Self.memberCount {
                    let name = "member-\(index)"
                    let text = "hello from \(name)"
                    let file = try ManyPeers.file(scratch, "\(name).bin", size: 64 * 1024)
                    let process = try scratch.launchCLI(name, [
                        "advertise", "--service-id", serviceID, "--strategy", "cluster", "--name", name, "--accept",
                        "--receive-dir", try scratch.directory(name).path, "--bytes", text, "--file", file.url.path,
                        "--json",
                    ] + ports.flatMap { ["--connect", "127.0.0.1:\($0)"] })
                    ports.append(try await ManyPeers.port(of: process))
                    members.append((name, text, file, process))
                }

                let others = Self.memberCount - 1
                for member in members {
                    try await ManyPeers.waitForCount(member.process, "connected", others, timeout: 120)
                    try await ManyPeers.waitForCount(member.process, "payload_received", 2 * others, timeout: 120)
                    try await ManyPeers.waitForCount(member.process, "payload_sent", 2 * others, timeout: 120)
                }
                for member in members {
                    // A member that requested by address knows the peer only by a local alias, so the payloads are
                    // matched by digest: exactly the 7 others' bytes and files, each once.
                    let received = member.process.events("payload_received")
                    let others = members.filter { $0.name != member.name }
                    let bytes = received.filter { $0.string("type") == "bytes" }.compactMap { $0.string("sha256") }
                    let files = received.filter { $0.string("type") == "file" }.compactMap { $0.string("sha256") }
                    #expect(bytes.sorted() == others.map { ManyPeers.sha256($0.text) }.sorted(), "\(member.name)")
                    #expect(files.sorted() == others.map(\.file.sha256).sorted(), "\(member.name)")
                    // Those who requested this member introduced themselves by name.
                    for later in members.drop(while: { $0.name != member.name }).dropFirst() {
                        #expect(ManyPeers.endpointID(of: later.name, seenBy: member.process) != nil, "\(member.name) never saw \(later.name)")
                    }
                    #expect(Set(member.process.events("connected").compactMap { $0.string("endpoint_id") }).count == others.count)
                    #expect(member.process.isRunning, "\(member.process.diagnostics)")
                }
            }
        }
    }
}
