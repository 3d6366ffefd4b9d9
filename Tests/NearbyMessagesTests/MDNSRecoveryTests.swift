import Foundation
import NearbyTestSupport
import Testing

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
             "needs scripts/with-test-network.sh (private avahi-daemon)"))
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

    @Test("avahi-daemon stopped: mDNS has an error at once; started again: cleared by the next advertisement, found again")
    func avahiStopStart() async throws {
        try await withTestTimeout(120, "mDNS stop/start") {
            let service = WiFiLANMessagesTests.serviceID("mdns")
            let collector = RadioStatusCollector()
            let publisher = try testManager(service)
            publisher.radioStatusHandler = { collector.append($0) }
            let first = try await publisher.publish(Message(text: "before"), options: PublishOptions(strategy: WiFiLANMessagesTests.wifiOnly))
            await first.cancel()
            #expect(collector.of(.mdns).isEmpty, "\(collector.statuses)")

            let logPath = ProcessInfo.processInfo.environment["NEARBY_TEST_AVAHI_LOG"] ?? ""
            @Sendable func startups() -> Int {
                ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").components(separatedBy: "Server startup complete").count - 1
            }
            let startedBefore = startups()
            let pid = try #require(Self.avahiPID())
            #expect(kill(pid, SIGTERM) == 0)
            #expect(await eventually(30) { collector.of(.mdns).map(\.hasError) == [true] }, "\(collector.statuses)")
            #expect(collector.of(.mdns).first?.problem == .unavailable)
            #expect(await eventually(30) { !Self.isRunning(pid) })

            let restarted = try Self.startAvahi()
            #expect(await eventually(30) { startups() > startedBefore })
            #expect(restarted.isRunning)

            // Wi-Fi LAN works again: a new publication advertises (which clears the problem) and is found.
            let subscription = try await testManager(service).subscribe(options: SubscribeOptions(strategy: WiFiLANMessagesTests.wifiOnly))
            let events = EventCollector()
            let collecting = events.collect(subscription)
            defer { collecting.cancel() }
            let message = Message(text: "after")
            let second = try await publisher.publish(message, options: PublishOptions(strategy: WiFiLANMessagesTests.wifiOnly))
            #expect(await eventually(30) { collector.of(.mdns).map(\.hasError) == [true, false] }, "\(collector.statuses)")
            #expect(await eventually(60) { events.found { $0 == message } })
            await second.cancel()
            await subscription.cancel()
        }
    }
}
