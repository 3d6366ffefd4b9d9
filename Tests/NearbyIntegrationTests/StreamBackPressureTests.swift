import Foundation
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import Testing

extension WiFiLANIntegration {
    /// STREAM payloads keep back-pressure end to end over real TCP: a receiving app that does not read holds the
    /// sender back (memory stays bounded), the connection survives the hold, then everything arrives intact.
    @Suite("Stream back-pressure", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct StreamBackPressureTests {
        static let total = 64 << 20
        static let piece = 64 << 10

        /// The byte at `offset` of the test stream.
        static func expected(_ offset: Int) -> UInt8 {
            UInt8(truncatingIfNeeded: (offset / piece) % 16 &* 31 &+ (offset % piece) % 7)
        }

        @Test("an app that does not read a 64 MiB stream stalls the sender at a bounded amount; then all arrives")
        func unreadStreamHoldsTheSender() async throws {
            try await withScratch(timeout: 300, "stream back-pressure") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("stream-bp")
                // Short keep-alive timeouts: the hold below outlasts them, and the connection must survive it.
                let keepAlive = KeepAliveSettings(interval: .milliseconds(500), timeout: .seconds(3))
                var senderLimits = ResourceLimits()
                // A healthy receiver that holds back looks like a stalled one to the sender; give it room.
                senderLimits.writeTimeout = .seconds(120)
                let receiver = try Peer(scratch, serviceID: serviceID, keepAlive: keepAlive, drainStreams: false)
                let sender = try Peer(scratch, serviceID: serviceID, keepAlive: keepAlive, limits: senderLimits)
                try await receiver.advertise("receiver", scratch)
                let pair = try await ConnectedPair.connect(advertiser: receiver, discoverer: sender, scratch)

                let produced = LockedValue(0)
                let pieces = (0..<16).map { index in
                    [UInt8]((0..<Self.piece).map { Self.expected(index * Self.piece + $0) })
                }
                try await sender.manager.sendStream(to: pair.advertiserID) {
                    let offset = produced.withLock { $0 }
                    guard offset < Self.total else { return nil }
                    produced.withLock { $0 += Self.piece }
                    return pieces[(offset / Self.piece) % 16]
                }
                let stream = try await receiver.log.wait("the stream") { event -> IncomingByteStream? in
                    if case .streamReceived(_, _, let stream) = event { return stream }
                    return nil
                }

                // The app does not read: production must stop well short of the whole stream.
                var last = -1
                var unchangedSince = ContinuousClock.now
                let stalledAt = try await eventually(within: 180, "the sender to stall (or finish)") { () -> Int? in
                    let now = produced.withLock { $0 }
                    if now >= Self.total { return now }
                    if now != last {
                        last = now
                        unchangedSince = .now
                        return nil
                    }
                    // Unchanged for longer than the keep-alive timeout.
                    return ContinuousClock.now - unchangedSince > .seconds(4) ? now : nil
                }
                print("stream back-pressure: the sender stalled after producing \(stalledAt) of \(Self.total) bytes")
                #expect(stalledAt < Self.total / 2, "the sender produced \(stalledAt) bytes while nobody read")
                for log in [receiver.log, sender.log] {
                    #expect(!log.contains {
                        if case .stateChanged(_, .disconnected, _) = $0 { return true }
                        return false
                    }, "the connection was dropped while the app held the stream back:\n\(log.summary)")
                }

                // Now the app reads: everything arrives intact, in order.
                var offset = 0
                var damaged: Int?
                for try await chunk in stream {
                    for byte in chunk {
                        if damaged == nil, byte != Self.expected(offset) { damaged = offset }
                        offset += 1
                    }
                }
                #expect(damaged == nil, "byte \(damaged ?? 0) differs")
                #expect(offset == Self.total)
                try await sender.waitForTransfer(nil, outgoing: true, timeout: 60, "the sender's success") {
                    if case .success = $0 { true } else { false }
                }
            }
        }
    }
}
