import NearbyTestSupport
import Foundation
import NearbyCore
import NearbyWiFiLAN
import NearbyWire
import Testing

/// Listening and connecting on loopback addresses.
@Suite("TCPListener and TCPConnector", .timeLimit(.minutes(5)))
struct TCPListenerConnectorTests {
    @Test("connecting to a closed port throws endpointIoError naming the attempt")
    func closedPort() async throws {
        let listener = try await TCPListener.bind(host: "127.0.0.1", onAccept: { _ in })
        let port = listener.port
        await listener.stop()
        let error = await tcpCaughtError {
            _ = try await withTestTimeout(20, "the refused connection") {
                try await TCPConnector.connect(hosts: ["127.0.0.1"], port: port)
            }
        }
        let nearbyError = try #require(error as? NearbyError, "got \(String(describing: error))")
        #expect(nearbyError.code == .endpointIoError)
        #expect(nearbyError.message.contains("127.0.0.1:\(port) (Connection refused)"))
    }

    @Test("hosts are tried in order; the error names every failed attempt")
    func hostsInOrder() async throws {
        let accepted = TCPAcceptedChannels()
        let listener = try await TCPListener.bind(host: "127.0.0.1", onAccept: accepted.onAccept)
        defer { Task { await listener.stop() } }

        // 127.0.0.2 is loopback too, but nothing listens there on this port.
        let client = try await withTestTimeout(20, "the fallback connection") {
            try await TCPConnector.connect(hosts: ["127.0.0.2", "127.0.0.1"], port: listener.port)
        }
        #expect(client.peerDescription == "127.0.0.1:\(listener.port)")
        let server = try await accepted.next()
        try await client.writeFrame([1])
        #expect(try await withTestTimeout(10, "a frame") { try await server.readFrame() } == [1])
        await client.close()
        await server.close()

        let error = await tcpCaughtError {
            _ = try await withTestTimeout(20, "two refused connections") {
                try await TCPConnector.connect(hosts: ["127.0.0.2", "127.0.0.3"], port: listener.port)
            }
        }
        let nearbyError = try #require(error as? NearbyError)
        #expect(nearbyError.code == .endpointIoError)
        #expect(nearbyError.message.contains("127.0.0.2:\(listener.port)"))
        #expect(nearbyError.message.contains("127.0.0.3:\(listener.port)"))
    }

    @Test("bad arguments are refused")
    func badArguments() async throws {
        let noHosts = await tcpCaughtError { _ = try await TCPConnector.connect(hosts: [], port: 1) }
        #expect((noHosts as? NearbyError)?.code == .invalidArgument)
        let badPort = await tcpCaughtError { _ = try await TCPConnector.connect(hosts: ["127.0.0.1"], port: 70_000) }
        #expect((badPort as? NearbyError)?.code == .invalidArgument)
        let badListenPort = await tcpCaughtError { _ = try await TCPListener.bind(port: -1, onAccept: { _ in }) }
        #expect((badListenPort as? NearbyError)?.code == .invalidArgument)
    }

    @Test("binding a port in use throws endpointIoError")
    func portInUse() async throws {
        let first = try await TCPListener.bind(host: "127.0.0.1", onAccept: { _ in })
        defer { Task { await first.stop() } }
        let error = await tcpCaughtError {
            _ = try await TCPListener.bind(host: "127.0.0.1", port: first.port, onAccept: { _ in })
        }
        #expect((error as? NearbyError)?.code == .endpointIoError)
    }

    @Test("a fixed port can be listened on again right after stop(); accepted channels outlive the listener")
    func fixedPortReuseAndAcceptedChannelsSurviveStop() async throws {
        let accepted = TCPAcceptedChannels()
        let first = try await TCPListener.bind(host: "127.0.0.1", onAccept: accepted.onAccept)
        let port = first.port
        let client = try await TCPConnector.connect(hosts: ["127.0.0.1"], port: port)
        let server = try await accepted.next()
        await first.stop()
        await first.stop()

        try await withTestTimeout(10, "frames after the listener stopped") {
            try await client.writeFrame([5])
            #expect(try await server.readFrame() == [5])
            try await server.writeFrame([6])
            #expect(try await client.readFrame() == [6])
        }

        let second = try await TCPListener.bind(host: "127.0.0.1", port: port, onAccept: { _ in })
        #expect(second.port == port)
        await second.stop()
        await client.close()
        await server.close()
    }

    @Test("the default host 0.0.0.0 accepts connections to 127.0.0.1")
    func defaultHostIsAnyIPv4() async throws {
        let accepted = TCPAcceptedChannels()
        let listener = try await TCPListener.bind(onAccept: accepted.onAccept)
        defer { Task { await listener.stop() } }
        #expect(listener.host == "0.0.0.0")
        #expect(listener.port > 0)
        let client = try await TCPConnector.connect(hosts: ["127.0.0.1"], port: listener.port)
        let server = try await accepted.next()
        await client.close()
        await server.close()
    }

    @Test("host :: listens dual stack when this system has IPv6")
    func dualStack() async throws {
        let accepted = TCPAcceptedChannels()
        let listener: TCPListener
        do {
            listener = try await TCPListener.bind(host: "::", onAccept: accepted.onAccept)
        } catch {
            // No IPv6 in this network namespace: nothing to check.
            return
        }
        defer { Task { await listener.stop() } }
        for host in ["127.0.0.1", "::1"] {
            let client: TCPEndpointChannel
            do {
                client = try await TCPConnector.connect(hosts: [host], port: listener.port)
            } catch {
                #expect(host == "::1", "IPv4 must reach a dual-stack listener: \(error)")
                continue
            }
            let server = try await accepted.next()
            try await client.writeFrame(Array(host.utf8))
            #expect(try await withTestTimeout(10, "a frame") { try await server.readFrame() } == Array(host.utf8))
            await client.close()
            await server.close()
        }
    }
}
