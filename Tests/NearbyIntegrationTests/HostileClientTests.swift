import Foundation
import NearbyConnections
import NearbySecurity
import NearbyTestSupport
import NearbyWire
import Testing

extension WiFiLANIntegration {
    /// Plain TCP sockets that speak nonsense to a running in-process advertiser. Each must be closed without the
    /// advertiser reporting a connection, and a well-behaved discoverer must still connect afterwards.
    @Suite("Hostile clients", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct HostileClientTests {
        enum Hostility: String, CaseIterable, Sendable {
            /// A plausible length prefix followed by random bytes.
            case garbageAfterPrefix
            /// A length prefix of 0x7FFFFFFF (2 GiB).
            case hugeLengthPrefix
            /// A valid request and ClientInit, then the ClientFinished of another key (commitment mismatch).
            case wrongCommitment
            /// Connects and never says anything (closed after the 2 s connection-request timeout).
            case silent
        }

        @Test("the advertiser closes the socket, reports no connection, and still serves a good discoverer",
              arguments: Hostility.allCases)
        func hostileClient(_ hostility: Hostility) async throws {
            try await withScratch(timeout: 90, "hostile client \(hostility)") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("hostile")
                let advertiser = try Peer(scratch, serviceID: serviceID)
                let (_, port) = try await advertiser.advertise("target", scratch)

                let client = try await RawTCPClient.connect(port: port)
                defer { client.close() }
                try await Self.misbehave(hostility, on: client)
                // The silent client must be dropped ~2 s after connecting; the bound leaves room for a slow machine.
                let closed = try await client.waitForClose(timeout: 10)
                #expect(closed, "the advertiser left the \(hostility) socket open")
                #expect(!advertiser.log.contains {
                    switch $0 {
                    case .connectionRequested, .stateChanged(_, .connected, _): true
                    default: false
                    }
                }, "\(advertiser.log.summary)")

                // The advertiser is still fine.
                let good = try Peer(scratch, serviceID: serviceID)
                let pair = try await ConnectedPair.connect(advertiser: advertiser, discoverer: good, scratch)
                try await good.manager.send(Data("ping".utf8), to: pair.advertiserID)
                try await advertiser.log.wait("ping") { event -> Bool? in
                    if case .bytesReceived(pair.discovererID, _, let data) = event, data == Data("ping".utf8) { return true }
                    return nil
                }
                try await advertiser.manager.send(Data("pong".utf8), to: pair.discovererID)
                try await good.log.wait("pong") { event -> Bool? in
                    if case .bytesReceived(pair.advertiserID, _, let data) = event, data == Data("pong".utf8) { return true }
                    return nil
                }
            }
        }

        private static func misbehave(_ hostility: Hostility, on client: RawTCPClient) async throws {
            switch hostility {
            case .garbageAfterPrefix:
                var generator = SeededGenerator(seed: 0x6E65_6172_6279)
                let garbage = [0xFF, 0xFF] + generator.bytes(198)
                try client.send(LengthPrefixFraming.encodeLength(garbage.count) + garbage)
            case .hugeLengthPrefix:
                try client.send([0x7F, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0xAB, count: 4096))
            case .wrongCommitment:
                let request = OfflineFrames.connectionRequest(.init(
                    endpointID: "EV1L", endpointInfo: Array("mallory".utf8), nonce: 1234, mediums: [.wifiLan]))
                var honest = Ukey2Client()
                try client.sendFrame(OfflineFrames.serialize(request))
                try client.sendFrame(try honest.start())
                let serverInit = try await client.readFrame(timeout: 10)
                guard case .sendAndComplete = honest.receive(serverInit) else {
                    throw IntegrationFailure("the advertiser's ServerInit does not satisfy an honest UKEY2 client")
                }
                var impostor = Ukey2Client()
                _ = try impostor.start()
                guard case .sendAndComplete(let otherFinished, _) = impostor.receive(serverInit) else {
                    throw IntegrationFailure("a second UKEY2 client did not accept the ServerInit")
                }
                try client.sendFrame(otherFinished)
            case .silent:
                break
            }
        }
    }
}
