import Foundation
import NearbyTestSupport
import Testing
import NearbyConnections
import NearbyCore

@testable import NearbyMessages

#if canImport(Glibc)
import Glibc
#endif

/// mDNS problems and their clearing, with the private avahi-daemon of scripts/with-test-network.sh stopped and
/// started again: the daemon named by the pid file in the namespace's private /run (started by the script, or
/// restarted by an earlier test) is stopped by its PID; the test starts a new one as its child, as the script
/// documents, and leaves it running for the tests after it (the script's cleanup ends it through the pid file).
@Suite(
    "mDNS radio state", .serialized,
    .enabled(if: inTestNetwork && ProcessInfo.processInfo.environment["NEARBY_TEST_AVAHI_CONF"] != nil,
             "needs scripts/with-test-network.sh (private avahi-daemon)"), .timeLimit(.minutes(5)))
struct MDNSRecoveryTests {
    static func avahiPID() -> pid_t? {
        guard let text = try? String(contentsOfFile: "/run/avahi-daemon/pid", encoding: .utf8) else { return nil }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Whether `pid` runs (a zombie, not yet reaped by its parent, does not).
    static func isRunning(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return !stat[close...].hasPrefix(") Z")
    }

    /// Starts avahi-daemon again, as the test network script does. With `posix_spawn`, not Foundation's `Process`:
    /// avahi-daemon closes the descriptors it inherits, and Foundation then takes it for exited and blocks its one
    /// child-reaping thread in `waitpid` on it, so no later `Process` in this test run would ever be seen to exit.
    static func startAvahi() throws -> SpawnedProcess {
        let environment = ProcessInfo.processInfo.environment
        return try SpawnedProcess(
            "/usr/sbin/avahi-daemon",
            ["--no-drop-root", "--no-chroot", "--no-rlimits", "-f", environment["NEARBY_TEST_AVAHI_CONF"]!],
            outputPath: environment["NEARBY_TEST_AVAHI_LOG"])
    }

    /// Whether an event matching `found` follows the first event matching `lost`.
    static func foundAgain<Event>(_ events: [Event], found: (Event) -> Bool, lost: (Event) -> Bool) -> Bool {
        guard let firstLost = events.firstIndex(where: lost) else { return false }
        return events[(firstLost + 1)...].contains(where: found)
    }

    /// Stops the namespace's avahi-daemon by its PID and waits until it is gone.
    static func stopAvahi() async throws {
        let pid = try #require(avahiPID())
        #expect(kill(pid, SIGTERM) == 0)
        #expect(await eventually(30) { !isRunning(pid) })
    }

    /// Runs `body`, a step taken while avahi-daemon is stopped; when it throws, starts the daemon again before
    /// passing the error on, so that the tests after this one find it running.
    static func restartingOnError<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            _ = try? await restartAvahi()
            throw error
        }
    }

    /// Starts avahi-daemon again and waits for its "Server startup complete" line.
    static func restartAvahi() async throws -> SpawnedProcess {
        let logPath = ProcessInfo.processInfo.environment["NEARBY_TEST_AVAHI_LOG"] ?? ""
        @Sendable func startups() -> Int {
            ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").components(separatedBy: "Server startup complete").count - 1
        }
        let startedBefore = startups()
        let restarted = try startAvahi()
        #expect(await eventually(30) { startups() > startedBefore })
        #expect(restarted.isRunning)
        return restarted
    }

    @Test("avahi-daemon stopped and started: running publication and subscription recover; mDNS problem reported, then cleared")
    func avahiStopStart() async throws {
        try await withTestTimeout(120, "mDNS stop/start") {
            let service = WiFiLANMessagesTests.serviceID("mdns")
            let collector = RadioStatusCollector()
            let publisher = try testManager(service)
            publisher.radioStatusHandler = { collector.append($0) }
            let subscriberRadio = RadioStatusCollector()
            let subscriber = try testManager(service)
            subscriber.radioStatusHandler = { subscriberRadio.append($0) }
            let message = Message(text: "survives avahi restarts")
            let publication = try await publisher.publish(message, options: PublishOptions(strategy: WiFiLANMessagesTests.wifiOnly))
            let subscription = try await subscriber.subscribe(options: SubscribeOptions(strategy: WiFiLANMessagesTests.wifiOnly))
            let events = EventCollector()
            let collecting = events.collect(subscription)
            defer { collecting.cancel() }
            #expect(await eventually(30) { events.found { $0 == message } }, "\(events.events)")
            #expect(collector.of(.mdns).isEmpty, "\(collector.statuses)")

            try await Self.stopAvahi()
            // Both managers report the problem; the subscriber loses the message (lostAfter zero).
            #expect(await eventually(30) { collector.of(.mdns).map(\.hasError) == [true] }, "\(collector.statuses)")
            #expect(collector.of(.mdns).first?.problem == .unavailable)
            #expect(await eventually(30) { subscriberRadio.of(.mdns).map(\.hasError) == [true] }, "\(subscriberRadio.statuses)")
            #expect(await eventually(30) { events.lost { $0 == message } }, "\(events.events)")

            _ = try await Self.restartAvahi()
            // Nothing is started again by the test: the same publication is published again, the same subscription
            // browses again, and the problem clears.
            #expect(await eventually(30) { collector.of(.mdns).map(\.hasError) == [true, false] }, "\(collector.statuses)")
            #expect(await eventually(30) { subscriberRadio.of(.mdns).map(\.hasError) == [true, false] }, "\(subscriberRadio.statuses)")
            #expect(await eventually(30) { Self.foundAgain(events.events) { $0.message == message && $0.kind == .found } lost: { $0.message == message && $0.kind == .lost } }, "\(events.events)")
            await publication.cancel()
            await subscription.cancel()
        }
    }

    @Test("publication and subscription started while avahi-daemon is stopped: both start, the mDNS problem is reported, and the message is found once the daemon is back")
    func startWhileAvahiStopped() async throws {
        try await withTestTimeout(120, "mDNS start while stopped") {
            let service = WiFiLANMessagesTests.serviceID("mdns-late")
            let publisherRadio = RadioStatusCollector()
            let subscriberRadio = RadioStatusCollector()
            let publisher = try testManager(service)
            publisher.radioStatusHandler = { publisherRadio.append($0) }
            let subscriber = try testManager(service)
            subscriber.radioStatusHandler = { subscriberRadio.append($0) }
            let message = Message(text: "published before avahi-daemon ran")

            try await Self.stopAvahi()
            let publication = try await Self.restartingOnError {
                try await publisher.publish(message, options: PublishOptions(strategy: WiFiLANMessagesTests.wifiOnly))
            }
            let subscription = try await Self.restartingOnError {
                try await subscriber.subscribe(options: SubscribeOptions(strategy: WiFiLANMessagesTests.wifiOnly))
            }
            let events = EventCollector()
            let collecting = events.collect(subscription)
            defer { collecting.cancel() }
            #expect(await eventually(30) { publisherRadio.of(.mdns).map(\.hasError) == [true] }, "\(publisherRadio.statuses)")
            #expect(publisherRadio.of(.mdns).first?.problem == .unavailable)
            #expect(await eventually(30) { subscriberRadio.of(.mdns).map(\.hasError) == [true] }, "\(subscriberRadio.statuses)")

            _ = try await Self.restartAvahi()
            #expect(await eventually(30) { publisherRadio.of(.mdns).map(\.hasError) == [true, false] }, "\(publisherRadio.statuses)")
            #expect(await eventually(30) { subscriberRadio.of(.mdns).map(\.hasError) == [true, false] }, "\(subscriberRadio.statuses)")
            #expect(await eventually(30) { events.found { $0 == message } }, "\(events.events)")
            await publication.cancel()
            await subscription.cancel()
        }
    }

    @Test("Connections started while avahi-daemon is stopped: advertising says it is not discoverable and is published once the daemon runs; discovery fails with mediumUnavailable")
    func connectionsStartedWhileAvahiStopped() async throws {
        try await withTestTimeout(120, "Connections started while avahi is stopped") {
            let serviceID = WiFiLANMessagesTests.serviceID("mdns-connections-late")
            let directory = try temporaryDirectory("mdns-connections-late")
            let options = ConnectionOptions(mediums: [.wifiLAN], receiveDirectory: directory)
            let advertising = ConnectionManager(serviceID: serviceID, strategy: .pointToPoint, options: options)
            let discovering = ConnectionManager(serviceID: serviceID, strategy: .pointToPoint, options: options)
            let early = ConnectionManager(serviceID: serviceID, strategy: .pointToPoint, options: options)

            try await Self.stopAvahi()
            let advertiser = Advertiser(connectionManager: advertising)
            let sessions = try await Self.restartingOnError {
                try await advertiser.startAdvertising(using: Data("late".utf8), mediums: [.wifiLAN])
            }
            #expect(sessions.first?.discoverabilityProblem?.code == .mediumUnavailable)
            let failures = LockedValue<[NearbyError]>([])
            // Subscribed before discovery starts (events are not replayed to later subscribers).
            let earlyEvents = early.events
            let watchingEarly = Task {
                for await event in earlyEvents {
                    if case .discoveryFailed(.wifiLAN, let error) = event { failures.withLock { $0.append(error) } }
                }
            }
            defer { watchingEarly.cancel() }
            // Kept until the end: a Discoverer that is released stops its discovery (Google's API does too), and
            // under TSan a temporary one stopped it before avahi's failure reached it (CI, session 10).
            let earlyDiscoverer = Discoverer(connectionManager: early)
            try await Self.restartingOnError { try await earlyDiscoverer.startDiscovery(mediums: [.wifiLAN]) }
            // Expectations that do not throw until avahi-daemon runs again, so that a failure here leaves it running
            // for the tests after this one.
            #expect(await eventually(30) { !failures.withLock { $0.isEmpty } }, "no discoveryFailed(wifiLAN)")
            #expect(failures.withLock { $0.first?.code } == .mediumUnavailable, "\(failures.withLock { $0 })")

            _ = try await Self.restartAvahi()
            #expect(await eventually(30) { sessions.first?.discoverabilityProblem == nil })
            let log = ConnectionEventCollector()
            let logging = log.collect(discovering.events)
            defer { logging.cancel() }
            let discoverer = Discoverer(connectionManager: discovering)
            try await discoverer.startDiscovery(mediums: [.wifiLAN])
            let wanted = advertising.localEndpointID
            #expect(await eventually(30) { log.found(wanted) >= 1 }, "\(log.events)")
            await discoverer.stopDiscoveryAndWait()
            await earlyDiscoverer.stopDiscoveryAndWait()
            await advertising.shutdown()
            await discovering.shutdown()
            await early.shutdown()
        }
    }

    @Test("avahi-daemon stopped and started: a Connections advertiser is lost by the discoverer, then found again")
    func connectionsAdvertiserRecovers() async throws {
        try await withTestTimeout(120, "Connections over an avahi restart") {
            let serviceID = WiFiLANMessagesTests.serviceID("mdns-connections")
            let directory = try temporaryDirectory("mdns-connections")
            let options = ConnectionOptions(mediums: [.wifiLAN], receiveDirectory: directory)
            let advertising = ConnectionManager(serviceID: serviceID, strategy: .pointToPoint, options: options)
            let discovering = ConnectionManager(serviceID: serviceID, strategy: .pointToPoint, options: options)
            let log = ConnectionEventCollector()
            let logging = log.collect(discovering.events)
            defer { logging.cancel() }
            let advertiser = Advertiser(connectionManager: advertising)
            let sessions = try await advertiser.startAdvertising(using: Data("recovering".utf8), mediums: [.wifiLAN])
            #expect(sessions.first?.discoverabilityProblem == nil)
            let discoverer = Discoverer(connectionManager: discovering)
            try await discoverer.startDiscovery(mediums: [.wifiLAN])
            let wanted = advertising.localEndpointID
            #expect(await eventually(30) { log.found(wanted) >= 1 }, "\(log.events)")

            try await Self.stopAvahi()
            #expect(await eventually(30) { log.lost(wanted) >= 1 }, "\(log.events)")
            #expect(await eventually(30) { sessions.first?.discoverabilityProblem?.code == .mediumUnavailable })

            _ = try await Self.restartAvahi()
            #expect(await eventually(30) { Self.foundAgain(log.events) { log.isFound($0, wanted) } lost: { log.isLost($0, wanted) } }, "\(log.events)")
            #expect(await eventually(30) { sessions.first?.discoverabilityProblem == nil })
            await discoverer.stopDiscoveryAndWait()
            await advertising.shutdown()
            await discovering.shutdown()
        }
    }
}

/// Records a Connections manager's discovery events.
final class ConnectionEventCollector: Sendable {
    private let storage = LockedValue<[ConnectionEvent]>([])
    var events: [ConnectionEvent] { storage.withLock { $0 } }

    func isFound(_ event: ConnectionEvent, _ id: EndpointID) -> Bool {
        if case .endpointFound(id, _, _) = event { true } else { false }
    }

    func isLost(_ event: ConnectionEvent, _ id: EndpointID) -> Bool {
        if case .endpointLost(id) = event { true } else { false }
    }

    /// How often `id` was found.
    func found(_ id: EndpointID) -> Int { events.filter { isFound($0, id) }.count }

    /// How often `id` was lost.
    func lost(_ id: EndpointID) -> Int { events.filter { isLost($0, id) }.count }

    func collect(_ stream: AsyncStream<ConnectionEvent>) -> Task<Void, Never> {
        Task { for await event in stream { self.storage.withLock { $0.append(event) } } }
    }
}
