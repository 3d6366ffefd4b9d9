import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyWire
import Testing

extension WiFiLANIntegration {
    /// Strangers that complete the real handshake with a `nearby advertise` process and then try to exhaust it:
    /// buffered BYTES payloads, and pending connections that never get answered (issue 22, defects 8 and 9).
    @Suite("Hostile peers against the advertiser's limits", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct HostileLimitsTests {
        /// `nearby advertise --accept` with `strategy` (cluster takes many connections at once, as a hub does).
        static func advertise(
            _ scratch: Scratch, _ tag: String, strategy: String = "point-to-point"
        ) async throws -> (CLIProcess, Int, String) {
            let serviceID = IntegrationEnvironment.uniqueServiceID(tag)
            let advertiser = try scratch.launchCLI("advertiser", [
                "advertise", "--service-id", serviceID, "--strategy", strategy, "--name", "target", "--accept", "--no-upgrade",
                "--receive-dir", try scratch.directory("inbox").path, "--json",
            ])
            let advertising = try await advertiser.waitForEvent("advertising")
            return (advertiser, Int(try #require(advertising.int("port"), "\(advertising)")), serviceID)
        }

        @Test("BYTES payloads past 16 MiB buffered for one endpoint fail with PAYLOAD_ERROR; the endpoint stays and still delivers")
        func bufferedBytesPerEndpoint() async throws {
            try await withScratch(timeout: 120, "buffered bytes per endpoint") { scratch in
                let (advertiser, port, _) = try await Self.advertise(scratch, "buffered")
                let peer = try await HostilePeer.connect(port: port, endpointID: "BUFR")
                defer { peer.close() }
                // Sixteen payloads of the largest size fill the 16 MiB per endpoint (each reserves its announced
                // size at its first chunk); the seventeenth does not fit. Before, all 64 would be buffered.
                let size = Int64(PayloadLimits.maxBytesPayloadSize)
                for id in Int64(1)...17 {
                    let header = OfflineFrames.payloadHeader(id: 500 + id, type: .bytes, totalSize: size)
                    try peer.send(OfflineFrames.payloadData(header: header, offset: 0, body: Data(count: 1), index: 0, isLast: false))
                }
                let refusal = try await peer.receive { frame in
                    guard case .payloadTransfer(let transfer) = frame else { return false }
                    return transfer.packetType == .control
                }
                guard case .payloadTransfer(let transfer) = refusal else { return }
                #expect(transfer.payloadHeader.id == 517 && transfer.controlMessage.event == .payloadError, "\(transfer)")
                // The endpoint is still up: a small payload is delivered.
                let small = OfflineFrames.payloadHeader(id: 600, type: .bytes, totalSize: 2)
                try peer.send(OfflineFrames.payloadData(header: small, offset: 0, body: Data("ok".utf8), index: 0, isLast: false))
                try peer.send(OfflineFrames.payloadData(header: small, offset: 2, body: nil, index: 1, isLast: true))
                let received = try await advertiser.waitForEvent("payload_received") { $0.int("payload_id") == 600 }
                #expect(received.string("endpoint_id") == "BUFR")
                #expect(!advertiser.events.contains { $0.event == "disconnected" && $0.string("endpoint_id") == "BUFR" })
            }
        }

        @Test("200 strangers that complete UKEY2 and never answer do not lock out a legitimate sender")
        func pendingConnectionsDoNotLockOut() async throws {
            try await withScratch(timeout: 240, "pending lock-out") { scratch in
                // Cluster, as a hub: point-to-point takes one connection at a time by its own rule.
                let (advertiser, port, serviceID) = try await Self.advertise(scratch, "lockout", strategy: "cluster")
                var strangers: [RawTCPClient] = []
                defer { for stranger in strangers { stranger.close() } }
                // More than maxPendingEndpoints (128): before, the table filled and every later connection was
                // closed before SERVER_INIT, legitimate or not, until the strangers' decisions timed out (60 s).
                for index in 0..<200 {
                    do {
                        strangers.append(try await HostilePeer.stallAfterHandshake(port: port, endpointID: String(format: "S%03d", index)))
                    } catch {
                        // Evicted or refused before its ServerInit: the policy at work, not a failure.
                        continue
                    }
                }
                #expect(strangers.count >= 128, "\(strangers.count) strangers got through their handshake")
                let file = try scratch.randomFile("hello.bin", size: 10_000)
                let sender = try scratch.launchCLI("sender", [
                    "send", "--service-id", serviceID, "--strategy", "cluster", "--address", "127.0.0.1:\(port)", "--name", "friend", "--accept",
                    "--file", file.path, "--json",
                ])
                #expect(try await sender.waitForExit(timeout: 60) == 0, "\(sender.diagnostics)")
                try await advertiser.waitForEvent("payload_received") { $0.string("type") == "file" }
                #expect(advertiser.isRunning)
            }
        }
    }
}
