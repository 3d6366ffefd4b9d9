import Foundation
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import Testing

extension WiFiLANIntegration {
    /// A raw-socket peer that completes the handshake, then floods KEEP_ALIVE and never reads (tiny receive
    /// buffer): our acks fill the socket and our writes block. The endpoint must be dropped by the write deadline,
    /// and the app's calls must never wait for the stuck write.
    @Suite("Stalled peer", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct StalledPeerTests {
        @Test("a peer that floods KEEP_ALIVE and never reads is dropped with a timeout naming the stalled write")
        func floodingPeerIsDropped() async throws {
            try await withScratch(timeout: 180, "stalled peer dropped") { scratch in
                let advertiser = try Peer(scratch, serviceID: IntegrationEnvironment.uniqueServiceID("stall"))
                let (_, port) = try await advertiser.advertise("target", scratch)
                // The peer asks for a 4 s keep-alive timeout, which is also our write deadline for it.
                let peer = try await StallingPeer.connectAndHandshake(
                    port: port, keepAliveIntervalMillis: 1000, keepAliveTimeoutMillis: 4000)
                defer { peer.close() }
                try peer.accept()
                let (id, _) = try await advertiser.answerRequest(accept: true)
                try await advertiser.waitForState(.connected, of: id)
                let floodStart = ContinuousClock.now
                peer.startFlood(encrypted: true)
                // For the report: when the advertiser's socket send buffer was (nearly) full, i.e. its writes stall.
                let filled = Task { () -> ContinuousClock.Instant? in
                    while !Task.isCancelled {
                        if let queue = peer.peerSendQueue(), queue > 2_000_000 { return .now }
                        try? await Task.sleep(for: .milliseconds(20))
                    }
                    return nil
                }
                // Filling its buffers (seconds: acks are small), then the 4 s deadline; room for a slow machine.
                let error = try await advertiser.waitForState(.disconnected, of: id, timeout: 120)
                let dropped = ContinuousClock.now
                filled.cancel()
                let stallStart = await filled.value
                print("stalled peer dropped \(dropped - floodStart) after the flood started, "
                      + "\(stallStart.map { "\(dropped - $0)" } ?? "?") after the advertiser's send buffer held 2 MB, "
                      + "\(peer.framesSent) KEEP_ALIVE frames sent")
                let stalled = try #require(error, "the stalled peer was disconnected without an error")
                #expect(stalled.code == .timeout, "\(stalled)")
                #expect(stalled.message.contains("write"), "\(stalled)")
                _ = try await eventually(within: 30, "the socket to be closed under the flood") {
                    peer.wasClosedByPeer ? true : nil
                }
            }
        }

        enum Exit: String, CaseIterable, Sendable {
            case disconnect, shutdown, reject, accept
        }

        @Test("disconnect, shutdown, accept and reject return within 5 s while the peer does not read",
              arguments: Exit.allCases)
        func exitsReturnPromptly(_ exit: Exit) async throws {
            try await withScratch(timeout: 150, "\(exit) under a stalled peer") { scratch in
                let advertiser = try Peer(scratch, serviceID: IntegrationEnvironment.uniqueServiceID("stall"))
                let (_, port) = try await advertiser.advertise("target", scratch)
                // Long keep-alive timeout (also the write deadline): nothing ends the connection by itself.
                let peer = try await StallingPeer.connectAndHandshake(
                    port: port, keepAliveIntervalMillis: 60_000, keepAliveTimeoutMillis: 120_000)
                defer { peer.close() }
                let id: EndpointID
                switch exit {
                case .disconnect, .shutdown:
                    try peer.accept()
                    id = try await advertiser.answerRequest(accept: true).id
                    try await advertiser.waitForState(.connected, of: id)
                    peer.startFlood(encrypted: true)
                case .reject, .accept:
                    id = try await advertiser.log.wait("a connection request") { event -> EndpointID? in
                        if case .connectionRequested(let id, _, _, _) = event { return id }
                        return nil
                    }
                    peer.startFlood(encrypted: false)
                }
                // The advertiser's socket send queue stops growing while the flood goes on: its kernel buffer is
                // full. A few thousand more flooded frames (each asking for an ack) then fill what the advertiser
                // buffers above the kernel, and its writer is stuck.
                var lastQueue = -1
                var samePolls = 0
                _ = try await eventually(within: 120, "the advertiser's send queue to fill") { () -> Bool? in
                    guard let queue = peer.peerSendQueue(), queue > 0 else { return nil }
                    samePolls = queue == lastQueue ? samePolls + 1 : 0
                    lastQueue = queue
                    return samePolls >= 50 ? true : nil
                }
                let filledAt = peer.framesSent
                _ = try await eventually(within: 60, "more flooded frames") {
                    peer.framesSent >= filledAt + 5_000 || peer.isBlocked ? true : nil
                }
                let manager = advertiser.manager
                let start = ContinuousClock.now
                defer {
                    print("\(exit) returned after \(ContinuousClock.now - start) (flood: \(peer.framesSent) frames, "
                          + "advertiser send queue: \(lastQueue) bytes)")
                }
                try await withTestTimeout(5, "\(exit) while the peer does not read") {
                    switch exit {
                    case .disconnect: await manager.disconnect(from: id)
                    case .shutdown: await manager.shutdown()
                    case .reject: try await manager.reject(id)
                    case .accept: try await manager.accept(id)
                    }
                }
                if exit == .disconnect || exit == .shutdown {
                    let error = try await advertiser.waitForState(.disconnected, of: id, timeout: 10)
                    #expect(error == nil, "\(String(describing: error))")
                }
            }
        }
    }
}
