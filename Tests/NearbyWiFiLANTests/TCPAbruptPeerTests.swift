import Foundation
import NIOCore
import NIOPosix
import NearbyTestSupport
import NearbyWiFiLAN
import NearbyWire
import Testing

/// Issue 21 (no leaked promise): a `nearby subscribe` once trapped with "leaking promise created at
/// TCPOutputShutdownObserver.swift" after its fetch target accepted the TCP connection and closed it at once; the
/// channel was already closed when the connector set up its pipeline, and the observer's promise was dropped
/// pending. Here a peer accepts and closes (half of the time with a reset) hundreds of times: every attempt must end
/// with a channel that reports the end or a clear error, and no promise may leak (a debug build traps on one).
@Suite(.timeLimit(.minutes(3))) struct TCPAbruptPeerTests {
    @Test func aPeerThatAcceptsAndClosesAtOnceNeverLeaksAPromiseOrHangs() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let closer = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                // Half with a reset (SO_LINGER 0), half with a FIN.
                if Bool.random(), let provider = channel as? any SocketOptionProvider {
                    return provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).flatMap { channel.close() }
                }
                return channel.close()
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(closer.localAddress?.port)

        var connected = 0
        var refused = 0
        for _ in 0..<300 {
            do {
                let channel = try await withTestTimeout(20, "a connection to a peer that closes at once") {
                    try await TCPConnector.connect(hosts: ["127.0.0.1"], port: port)
                }
                connected += 1
                // The end must come, as nil or a NearbyError, never as a wait without end.
                let ended = try await withTestTimeout(20, "the end of a connection the peer closed") {
                    do {
                        return try await channel.readFrame() == nil
                    } catch is NearbyError {
                        return true
                    }
                }
                #expect(ended)
                await channel.close()
            } catch let error as NearbyError {
                #expect(error.code == .endpointIoError)
                refused += 1
            }
        }
        #expect(connected + refused == 300)
        try await closer.close()
    }
}
