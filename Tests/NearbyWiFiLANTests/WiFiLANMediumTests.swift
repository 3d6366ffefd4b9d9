import NearbyTestSupport
import Foundation
import NearbyCore
import NearbyWiFiLAN
import NearbyWire
import Testing

/// The Wi-Fi LAN medium with a scripted DNS-SD backend, or without one: runs anywhere (TCP on 127.0.0.1 only).
@Suite("WiFiLANMedium without avahi", .timeLimit(.minutes(5)))
struct WiFiLANMediumTests {
    private let endpointInfo: [UInt8] = Array("Pixel of Test".utf8) + [0x00, 0xFF, 0x10]

    @Test("advertising publishes the Nearby service type, 10-byte instance name, TXT n and the listening port")
    func advertisingPublishesService() async throws {
        let fake = WiFiLANMediumFakeDNSSD()
        let medium = WiFiLANMedium(serviceDiscovery: { fake }, listenHost: "127.0.0.1")
        let serviceID = wifiLANMediumUniqueServiceID()
        let session = try await medium.startAdvertising(
            AdvertisingRequest(serviceID: serviceID, endpointID: "AB12", endpointInfo: endpointInfo, pcp: .p2pStar),
            onIncoming: { channel in Task { await channel.close() } }
        )
        let service = try #require(fake.registered.value.first)
        let expectedType = ServiceIDHash.wifiLanServiceType(serviceID: serviceID).name
        #expect(service.serviceType == expectedType)
        #expect(session.advertisedName == expectedType)
        #expect(session.medium == .wifiLAN)
        #expect(session.discoverabilityProblem == nil)
        #expect(Int(service.port) == session.port)
        #expect(service.instanceName.count == 14)
        let info = try WifiLanServiceInfo(serviceName: service.instanceName)
        #expect(info.encodedBytes.count == 10)
        #expect(info.endpointID.value == "AB12")
        #expect(info.pcp == .p2pStar)
        #expect(info.matches(serviceID: serviceID))
        #expect(!info.isWebRTCConnectable)
        let txtValue = try #require(service.txt["n"])
        #expect(try WifiLanTXTRecord.decodeEndpointInfo(String(decoding: txtValue, as: UTF8.self)) == endpointInfo)
        #expect((session as? WiFiLANAdvertisingSession)?.instanceName == service.instanceName)

        await session.stop()
        #expect(fake.withdrawn.value == [service.instanceName])
        await session.stop()
        // The listener is gone.
        let error = await tcpCaughtError {
            _ = try await TCPConnector.connect(hosts: ["127.0.0.1"], port: session.port!)
        }
        #expect((error as? NearbyError)?.code == .endpointIoError)
    }

    @Test("a fixed port from the request is used")
    func fixedPort() async throws {
        let probe = try await TCPListener.bind(host: "127.0.0.1", onAccept: { _ in })
        let port = probe.port
        await probe.stop()
        let medium = WiFiLANMedium(serviceDiscovery: { WiFiLANMediumFakeDNSSD() }, listenHost: "127.0.0.1")
        let session = try await medium.startAdvertising(
            AdvertisingRequest(serviceID: "s", endpointID: "ABCD", endpointInfo: [], pcp: .p2pCluster, port: port),
            onIncoming: { _ in }
        )
        #expect(session.port == port)
        await session.stop()
    }

    @Test("without a DNS-SD daemon, advertising still listens, says why it is not discoverable, and accepts by address")
    func unreachableDaemonStillListens() async throws {
        let medium = WiFiLANMedium(
            serviceDiscovery: { throw NearbyError(.mediumUnavailable, "Daemon not running") },
            listenHost: "0.0.0.0"
        )
        let incoming = TCPAcceptedChannels()
        let session = try await medium.startAdvertising(
            AdvertisingRequest(serviceID: wifiLANMediumUniqueServiceID(), endpointID: "ZZ99", endpointInfo: endpointInfo, pcp: .p2pPointToPoint),
            onIncoming: { channel in incoming.continuation.yield(channel as! TCPEndpointChannel) }
        )
        let problem = try #require(session.discoverabilityProblem)
        #expect(problem.code == .mediumUnavailable)
        #expect(problem.message.contains("not discoverable: avahi-daemon is not running"))
        #expect(problem.message.contains("connections by address still work"))

        let port = try #require(session.port)
        let client = try await withTestTimeout(20, "a connection by address") {
            try await medium.connect(to: .tcp(hosts: ["127.0.0.1"], port: port))
        }
        let server = try await incoming.next()
        try await withTestTimeout(10, "frames both ways") {
            try await client.writeFrame([1, 2])
            #expect(try await server.readFrame() == [1, 2])
            try await server.writeFrame([3])
            #expect(try await client.readFrame() == [3])
        }
        await client.close()
        await server.close()
        await session.stop()
    }

    @Test("a failed registration is reported with its own code and message")
    func registrationFailure() async throws {
        let fake = WiFiLANMediumFakeDNSSD(registerError: NearbyError(.unknown, "name collision"))
        let medium = WiFiLANMedium(serviceDiscovery: { fake }, listenHost: "127.0.0.1")
        let session = try await medium.startAdvertising(
            AdvertisingRequest(serviceID: "s", endpointID: "ABCD", endpointInfo: [], pcp: .p2pCluster),
            onIncoming: { _ in }
        )
        let problem = try #require(session.discoverabilityProblem)
        #expect(problem.code == .unknown)
        #expect(problem.message.contains("not discoverable"))
        #expect(problem.message.contains("name collision"))
        #expect(session.port != nil)
        await session.stop()
    }

    @Test("bad advertising requests are refused before listening")
    func badRequests() async throws {
        let medium = WiFiLANMedium(serviceDiscovery: { WiFiLANMediumFakeDNSSD() }, listenHost: "127.0.0.1")
        for request in [
            AdvertisingRequest(serviceID: "s", endpointID: "TOOLONG", endpointInfo: [], pcp: .p2pStar),
            AdvertisingRequest(serviceID: "s", endpointID: "ABCD", endpointInfo: [UInt8](repeating: 1, count: 132), pcp: .p2pStar),
            AdvertisingRequest(serviceID: "s", endpointID: "ABCD", endpointInfo: [], pcp: .p2pStar, port: 70_000),
        ] {
            let error = await tcpCaughtError { _ = try await medium.startAdvertising(request, onIncoming: { _ in }) }
            #expect((error as? NearbyError)?.code == .invalidArgument, "\(request): \(String(describing: error))")
        }
    }

    @Test("discovery reports matching endpoints, skips the others, reports lost, and ends with the backend's error")
    func discoveryFiltersAndTranslates() async throws {
        let fake = WiFiLANMediumFakeDNSSD()
        let medium = WiFiLANMedium(serviceDiscovery: { fake })
        let serviceID = wifiLANMediumUniqueServiceID()
        let recorder = await WiFiLANMediumDiscoveryRecorder.start(medium.discover(serviceID: serviceID, pcp: .p2pCluster))

        func service(_ name: String, txt: [String: [UInt8]], addresses: [String] = ["127.0.0.1"]) -> DNSSDResolvedService {
            DNSSDResolvedService(
                instanceName: name, serviceType: ServiceIDHash.wifiLanServiceType(serviceID: serviceID).name,
                hostName: "peer.local", addresses: addresses, port: 4242, txt: txt, interfaceIndex: 1)
        }
        func name(_ endpointID: String, pcp: PCP = .p2pCluster, serviceID: String) throws -> String {
            WifiLanServiceInfo(pcp: pcp, endpointID: try EndpointID(endpointID), serviceID: serviceID).serviceName
        }
        let goodTXT = ["n": Array(try WifiLanTXTRecord.encodeEndpointInfo(endpointInfo).utf8)]
        let good = try name("GOOD", serviceID: serviceID)

        fake.feed.yield(.found(service("not base64 !", txt: goodTXT)))
        fake.feed.yield(.found(service(try name("OTHR", serviceID: "another service"), txt: goodTXT)))
        fake.feed.yield(.found(service(try name("STAR", pcp: .p2pStar, serviceID: serviceID), txt: goodTXT)))
        fake.feed.yield(.found(service(try name("NOTX", serviceID: serviceID), txt: [:])))
        fake.feed.yield(.found(service(try name("BADN", serviceID: serviceID), txt: ["n": Array("*&^".utf8)])))
        fake.feed.yield(.found(service(good, txt: goodTXT, addresses: ["fe80::1%lo", "127.0.0.1", "::1", "10.1.2.3"])))
        fake.feed.yield(.lost(instanceName: try name("STAR", pcp: .p2pStar, serviceID: serviceID)))
        fake.feed.yield(.lost(instanceName: good))
        fake.feed.finish(throwing: NearbyError(.mediumUnavailable, "daemon went away"))

        try await recorder.waitForEnd()
        let expected = DiscoveredEndpoint(
            endpointID: "GOOD", endpointInfo: endpointInfo, medium: .wifiLAN,
            route: .tcp(hosts: ["127.0.0.1", "10.1.2.3", "fe80::1%lo", "::1"], port: 4242))
        #expect(await recorder.events == [.found(expected), .lost(endpointID: "GOOD", medium: .wifiLAN)])
        #expect((await recorder.endError as? NearbyError)?.code == .mediumUnavailable)
        #expect(fake.browsedTypes.value == [ServiceIDHash.wifiLanServiceType(serviceID: serviceID).name])
    }

    @Test("discovery without a DNS-SD daemon finishes with mediumUnavailable")
    func discoveryWithoutDaemon() async throws {
        let medium = WiFiLANMedium(serviceDiscovery: { throw NearbyError(.mediumUnavailable, "Daemon not running") })
        let recorder = await WiFiLANMediumDiscoveryRecorder.start(medium.discover(serviceID: "s", pcp: .p2pStar))
        try await recorder.waitForEnd()
        #expect((await recorder.endError as? NearbyError)?.code == .mediumUnavailable)
    }

    @Test("connect refuses routes that are not TCP")
    func connectRefusesOtherRoutes() async throws {
        let medium = WiFiLANMedium(serviceDiscovery: { WiFiLANMediumFakeDNSSD() })
        let error = await tcpCaughtError { _ = try await medium.connect(to: .ble(address: "00:11:22:33:44:55", psm: 128)) }
        #expect((error as? NearbyError)?.code == .invalidArgument)
        #expect(medium.kind == .wifiLAN)
    }
}

/// The Wi-Fi LAN medium against a real avahi-daemon, inside the private network namespace made by
/// `scripts/with-test-network.sh` (skipped elsewhere).
@Suite("WiFiLANMedium with avahi", .enabled(if: wifiLANMediumHasAvahi, "needs scripts/with-test-network.sh"), .timeLimit(.minutes(5)))
struct WiFiLANMediumAvahiTests {
    private let endpointInfo: [UInt8] = Array("Avahi test device".utf8) + [0x01, 0x80]

    @Test("one medium advertises, another discovers it, connects through the route, and frames flow")
    func advertiseDiscoverConnect() async throws {
        let serviceID = wifiLANMediumUniqueServiceID()
        let advertiser = WiFiLANMedium()
        let discoverer = WiFiLANMedium()
        let incoming = TCPAcceptedChannels()
        let session = try await withTestTimeout(30, "advertising to start") { [endpointInfo] in
            try await advertiser.startAdvertising(
                AdvertisingRequest(serviceID: serviceID, endpointID: "ADV1", endpointInfo: endpointInfo, pcp: .p2pPointToPoint),
                onIncoming: { channel in incoming.continuation.yield(channel as! TCPEndpointChannel) }
            )
        }
        #expect(session.discoverabilityProblem == nil)

        let recorder = await WiFiLANMediumDiscoveryRecorder.start(
            discoverer.discover(serviceID: serviceID, pcp: .p2pPointToPoint))
        let otherStrategy = await WiFiLANMediumDiscoveryRecorder.start(
            discoverer.discover(serviceID: serviceID, pcp: .p2pCluster))
        let endpoint = try await recorder.waitFor(within: 20, "the advertised endpoint", wifiLANMediumFound("ADV1"))
        #expect(endpoint.endpointInfo == endpointInfo)
        #expect(endpoint.medium == .wifiLAN)
        guard case .tcp(let hosts, let port) = endpoint.route else {
            Issue.record("expected a TCP route, got \(endpoint.route)")
            return
        }
        #expect(port == session.port)
        #expect(hosts.contains("127.0.0.1"))

        let client = try await withTestTimeout(20, "a connection through the discovered route") {
            try await discoverer.connect(to: endpoint.route)
        }
        let server = try await incoming.next()
        try await withTestTimeout(20, "frames both ways") {
            try await client.writeFrame(Array("hello advertiser".utf8))
            #expect(try await server.readFrame() == Array("hello advertiser".utf8))
            try await server.writeFrame(Array("hello discoverer".utf8))
            #expect(try await client.readFrame() == Array("hello discoverer".utf8))
        }
        await client.close()
        await server.close()

        // By now the same daemon has long resolved the service for the other browse too; it must have skipped it.
        #expect(await otherStrategy.events.isEmpty)
        await otherStrategy.stop()
        await recorder.stop()
        await session.stop()
    }

    @Test("avahi-browse sees the instance name and the TXT n entry")
    func avahiBrowseSeesService() async throws {
        let serviceID = wifiLANMediumUniqueServiceID()
        let medium = WiFiLANMedium()
        let session = try await withTestTimeout(30, "advertising to start") { [endpointInfo] in
            try await medium.startAdvertising(
                AdvertisingRequest(serviceID: serviceID, endpointID: "AVB2", endpointInfo: endpointInfo, pcp: .p2pStar),
                onIncoming: { _ in }
            )
        }
        let advertising = try #require(session as? WiFiLANAdvertisingSession)
        let encodedInfo = try WifiLanTXTRecord.encodeEndpointInfo(endpointInfo)
        var resolvedLine: Substring?
        for _ in 0..<5 where resolvedLine == nil {
            let output = try await wifiLANMediumAvahiBrowse(advertising.serviceType)
            resolvedLine = output.split(separator: "\n").first { line in
                line.hasPrefix("=;") && line.contains(";\(advertising.instanceName);\(advertising.serviceType);")
            }
        }
        let line = try #require(resolvedLine, "avahi-browse never resolved \(advertising.instanceName)")
        #expect(line.contains("\"n=\(encodedInfo)\""))
        #expect(line.contains(";\(session.port!);"))
        await session.stop()
    }

    @Test("stopping the advertisement makes the discoverer report the endpoint lost")
    func stopReportsLost() async throws {
        let serviceID = wifiLANMediumUniqueServiceID()
        let advertiser = WiFiLANMedium()
        let session = try await withTestTimeout(30, "advertising to start") { [endpointInfo] in
            try await advertiser.startAdvertising(
                AdvertisingRequest(serviceID: serviceID, endpointID: "LOST", endpointInfo: endpointInfo, pcp: .p2pCluster),
                onIncoming: { _ in }
            )
        }
        let recorder = await WiFiLANMediumDiscoveryRecorder.start(
            WiFiLANMedium().discover(serviceID: serviceID, pcp: .p2pCluster))
        _ = try await recorder.waitFor(within: 20, "the advertised endpoint", wifiLANMediumFound("LOST"))
        await session.stop()
        _ = try await recorder.waitFor(within: 20, "the endpoint to be lost") { event -> Bool? in
            event == .lost(endpointID: "LOST", medium: .wifiLAN) ? true : nil
        }
        await recorder.stop()
    }
}
