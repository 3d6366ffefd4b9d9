import Foundation
import Logging
import NearbyCore
import NearbyMessagesService
import NearbyTestSupport
import NearbyWire
import Testing

@testable import NearbyMessages

#if canImport(Glibc)
import Glibc
#endif

/// Log records at notice level and above, kept for a test to wait on.
final class NoticeLog: Sendable {
    private let lines = LockedValue<[String]>([])
    var all: [String] { lines.withLock { $0 } }

    var logger: Logger {
        Logger(label: "test.stranger") { _ in Handler(record: { line in self.lines.withLock { $0.append(line) } }) }
    }

    private struct Handler: LogHandler {
        let record: @Sendable (String) -> Void
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .notice
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { record("\(event.message) \(event.metadata ?? [:])") }
    }
}

/// A TCP listener on 127.0.0.1 that only counts the connections it accepts: a local service a stranger would like
/// us to connect to.
final class CountingListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw IntegrationFailure("cannot listen: errno \(errno)") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Connections accepted so far (each is closed at once).
    func acceptPending() -> Int {
        var count = 0
        while true {
            let connection = accept(descriptor, nil, nil)
            guard connection >= 0 else { return count }
            Glibc.close(connection)
            count += 1
        }
    }

    func close() { Glibc.close(descriptor) }
}

extension WiFiLANIntegration {
    /// Nearby Messages and its service against strangers on the LAN (issue 22): a stranger's mDNS record pointing at
    /// loopback, many distinct large messages, messages whose event lines balloon, and texts made to be options.
    @Suite("Nearby Messages against strangers", .enabled(if: IntegrationEnvironment.inTestNetwork), .serialized, .timeLimit(.minutes(10)))
    struct MessagesStrangerTests {
        static let wifiOnly = MessageStrategy(mediums: .wifiLAN)

        static func manager(_ serviceID: String, logger: Logger = Logger(label: "test.messages")) throws -> MessageManager {
            let consent = FileManager.default.temporaryDirectory.appendingPathComponent("consent-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: consent, withIntermediateDirectories: true)
            return MessageManager(
                serviceID: serviceID, logger: logger, consent: ConsentStore(directory: consent),
                permissionRequest: { .grantForThisRun })
        }

        /// Answers mDNS for a service of `serviceID` as a device on the network would (a multicast response from
        /// port 5353, not through avahi's publishing API): instance `endpointID`, endpoint info `info`, at
        /// `address`:`port`.
        static func injectRecord(serviceID: String, endpointID: String, info: [UInt8], address: String, port: Int) async throws {
            let instance = WifiLanServiceInfo(
                pcp: .p2pPointToPoint, endpointID: try EndpointID(endpointID), serviceID: serviceID).serviceName
            let serviceType = ServiceIDHash.wifiLanServiceType(serviceID: serviceID).name
            let txt = "n=" + (try WifiLanTXTRecord.encodeEndpointInfo(info))
            let script = """
                import socket, struct, sys, time
                def name(n):
                    return b''.join(bytes([len(l)]) + l.encode() for l in n.split('.') if l) + b'\\0'
                def rr(n, t, rdata, flush=True):
                    return name(n) + struct.pack('>HHIH', t, 1 | (0x8000 if flush else 0), 120, len(rdata)) + rdata
                inst, stype, port, addr, txt = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5].encode()
                host = 'stranger-%d.local' % port
                full = inst + '.' + stype + '.local'
                answers = [rr(stype + '.local', 12, name(full), False), rr(full, 33, struct.pack('>HHH', 0, 0, port) + name(host)),
                           rr(full, 16, bytes([len(txt)]) + txt), rr(host, 1, socket.inet_aton(addr))]
                packet = struct.pack('>HHHHHH', 0, 0x8400, 0, len(answers), 0, 0) + b''.join(answers)
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                s.bind(('0.0.0.0', 5353))
                s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton('127.0.0.1'))
                s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 255)
                for _ in range(3):
                    s.sendto(packet, ('224.0.0.251', 5353))
                    time.sleep(0.3)
                """
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = ["-c", script, instance, serviceType, "\(port)", address, txt]
            try process.run()
            _ = try await eventually(within: 20, "the stranger's mDNS answer to be sent") { process.isRunning ? nil : true }
            #expect(process.terminationStatus == 0)
        }

        @Test("a stranger's record pointing at 127.0.0.1 makes no subscriber connect there (it is skipped and logged)")
        func loopbackRecordIsNotConnectedTo() async throws {
            try await withScratch(timeout: 90, "stranger loopback record") { _ in
                let serviceID = IntegrationEnvironment.uniqueServiceID("loopback")
                let listener = try CountingListener()
                defer { listener.close() }
                let log = NoticeLog()
                let subscription = try await Self.manager(serviceID, logger: log.logger)
                    .subscribe(options: SubscribeOptions(strategy: Self.wifiOnly))
                // A large message's descriptor: a subscriber would connect to fetch it.
                let large = Message(content: Data(repeating: 7, count: 4_000), namespace: "", type: "")
                try await Self.injectRecord(
                    serviceID: serviceID, endpointID: "EV7L", info: MessageEnvelope.descriptor(MessageDescriptor(large)).bytes,
                    address: "127.0.0.1", port: listener.port)
                let skipped = try await eventually(within: 45, "the subscriber to skip the stranger's record") {
                    log.all.first { $0.contains("no address we may connect to") && $0.contains("127.0.0.1") }
                }
                #expect(skipped.contains("loopback, in a record from the network"), "\(skipped)")
                #expect(listener.acceptPending() == 0)
                #expect(subscription.foundMessages.isEmpty)
                await subscription.cancel()
            }
        }

        @Test("a stranger publishing 24 distinct large messages: the subscriber finds at most its limit, caches at most its limit, and holds nothing once they are lost")
        func distinctLargeMessagesAreBounded() async throws {
            try await withScratch(timeout: 180, "many distinct messages") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("distinct")
                let socket = scratch.root.appendingPathComponent("stranger.sock").path
                let stranger = try scratch.launchCLI("stranger", [
                    "service", "--socket", socket, "--state", scratch.root.appendingPathComponent("stranger.json").path,
                    "--medium", "wifi-lan", "--json",
                ])
                try await stranger.waitForEvent("service_started")
                let log = NoticeLog()
                var options = SubscribeOptions(strategy: Self.wifiOnly)
                options.limits.maxFoundMessages = 10
                options.limits.maxCachedMessages = 4
                let subscription = try await Self.manager(serviceID, logger: log.logger).subscribe(options: options)
                let client = try await MessageServiceClient.connect(socketPath: URL(fileURLWithPath: socket))
                for index in 0..<24 {
                    let content = [UInt8](repeating: UInt8(index), count: 2_000)
                    let response = try await client.send(
                        ServiceRequest(id: 0, op: .publish, serviceID: serviceID, contentHex: Hex.encode(content)))
                    #expect(response.ok, "\(response)")
                }
                _ = try await eventually(within: 90, "the subscriber to reach its limit") {
                    subscription.foundMessages.count == 10 && log.all.contains { $0.contains("at its limits") } ? true : nil
                }
                #expect(subscription.state.withLock { $0.fetched.count } <= 4)
                await client.close()  // its publications end with it
                _ = try await eventually(within: 60, "every message to be lost") { subscription.foundMessages.isEmpty ? true : nil }
                let held = subscription.state.withLock { ($0.fetched.count, $0.messages.sourceCount) }
                #expect(held.0 <= 4 && held.1 == 0, "\(held)")
                await subscription.cancel()
                stranger.signal(SIGTERM)
                _ = try await stranger.waitForExit()
            }
        }

        @Test("poison messages (100 KiB of 0x01) and texts made to be options: service clients stay connected, watch and list work, notify-send gets -- and a bounded rate")
        func poisonMessagesThroughTheService() async throws {
            try await withScratch(timeout: 240, "poison messages through the service") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("poison")
                let strangerSocket = scratch.root.appendingPathComponent("stranger.sock").path
                let socket = scratch.root.appendingPathComponent("victim.sock").path
                let bin = try scratch.directory("bin")
                let calls = scratch.root.appendingPathComponent("notify-calls")
                let script = bin.appendingPathComponent("notify-send")
                try "#!/bin/sh\nprintf '%s|' \"$@\" >> '\(calls.path)'; echo >> '\(calls.path)'; sleep 1\n"
                    .write(to: script, atomically: true, encoding: .utf8)
                chmod(script.path, 0o755)
                let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
                let stranger = try scratch.launchCLI("stranger", [
                    "service", "--socket", strangerSocket, "--state", scratch.root.appendingPathComponent("s.json").path,
                    "--medium", "wifi-lan", "--json",
                ])
                let victim = try scratch.launchCLI(
                    "victim", [
                        "service", "--socket", socket, "--state", scratch.root.appendingPathComponent("v.json").path,
                        "--medium", "wifi-lan", "--notify", "--json",
                    ],
                    environment: ["PATH": path, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(scratch.root.path)/no-bus"])
                try await stranger.waitForEvent("service_started")
                try await victim.waitForEvent("service_started")
                let started = Date()

                let follower = try await MessageServiceClient.connect(socketPath: URL(fileURLWithPath: socket))
                #expect(try await follower.send(ServiceRequest(id: 0, op: .subscribe, serviceID: serviceID)).ok)
                var events = follower.events.makeAsyncIterator()
                let publisher = try await MessageServiceClient.connect(socketPath: URL(fileURLWithPath: strangerSocket))
                var expected: Set<Data> = []
                for index in 0..<6 {
                    var content = Data(repeating: 0x01, count: Message.maximumContentSize)
                    content[0] = UInt8(index + 2)
                    expected.insert(content)
                    #expect(try await publisher.send(
                        ServiceRequest(id: 0, op: .publish, serviceID: serviceID, contentHex: Hex.encode(content))).ok)
                }
                let option = Data("--hint=string:x-nearby:evil".utf8)
                expected.insert(option)
                #expect(try await publisher.send(
                    ServiceRequest(id: 0, op: .publish, serviceID: serviceID, contentHex: Hex.encode(option))).ok)
                var found: Set<Data> = []
                while found.count < expected.count {
                    let event = try #require(await events.next(), "the follower was disconnected: \(String(describing: follower.disconnection))")
                    if event.kind == .found, let message = event.decodedMessage { found.insert(message.content) }
                }
                #expect(found == expected)

                // A later watch replays all seven (about 4.8 MiB of lines, over the 4 MiB output limit) and stays connected.
                let watch = try scratch.launchCLI("watch", ["service", "watch", "--socket", socket, "--json", "--timeout", "60"])
                _ = try await eventually(within: 90, "the watch to print every message") {
                    watch.events("message_found").count >= expected.count ? true : nil
                }
                #expect(watch.isRunning)
                // A list of three large publications of our own.
                for index in 0..<3 {
                    let content = Data(repeating: 0x01, count: Message.maximumContentSize - index)
                    #expect(try await follower.send(
                        ServiceRequest(id: 0, op: .publish, serviceID: "other-\(serviceID)", contentHex: Hex.encode(content))).ok)
                }
                let list = try scratch.launchCLI("list", ["service", "list", "--socket", socket, "--json"])
                #expect(try await list.waitForExit() == 0, "\(list.diagnostics)")
                #expect(list.events.count >= 4, "\(list.events.count) entries listed")
                #expect(follower.disconnection == nil)

                let elapsed = Date().timeIntervalSince(started)
                let lines = ((try? String(contentsOf: calls, encoding: .utf8)) ?? "").split(separator: "\n")
                #expect(!lines.isEmpty)
                #expect(Double(lines.count) <= 5 + elapsed + 1, "\(lines.count) notifications in \(elapsed) s")
                for line in lines { #expect(line.hasPrefix("--app-name=nearby|--|Nearby message"), "\(line)") }

                watch.signal(SIGTERM)
                _ = try await watch.waitForExit()
                await publisher.close()
                await follower.close()
                for process in [stranger, victim] { process.signal(SIGTERM) }
                for process in [stranger, victim] { _ = try await process.waitForExit() }
            }
        }
    }
}
