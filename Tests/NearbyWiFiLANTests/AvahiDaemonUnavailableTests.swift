import Foundation
import NearbyWiFiLAN
import NearbyWire
import Testing

/// `AvahiServiceDiscovery()` without a reachable daemon. libdbus reads `DBUS_SYSTEM_BUS_ADDRESS` once per process,
/// so the check runs in a child process: this test binary again, running only ``childConnectsWithoutDaemon()``,
/// with the bus address pointing at a socket that does not exist. Nothing is sent on any network.
@Suite(.timeLimit(.minutes(5))) struct AvahiDaemonUnavailableTests {
    static let childMarker = "NEARBY_TEST_NO_DAEMON_CHILD"
    static let isChild = ProcessInfo.processInfo.environment[childMarker] != nil

    @Test(.enabled(if: !isChild))
    func initThrowsMediumUnavailableWhenTheDaemonIsUnreachable() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childMarker] = "1"
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/swift-nearby-test/bus.sock"
        environment["NEARBY_TEST_NETNS"] = nil
        let result = try await runChildProcess(
            "/proc/self/exe",
            ["--testing-library", "swift-testing", "--filter", "childConnectsWithoutDaemon"],
            environment: environment,
            timeout: 60
        )
        #expect(result.output.contains("NO-DAEMON-RESULT: mediumUnavailable"), "child output: \(result.output)")
        #expect(result.output.contains("avahi-daemon is not running"), "child output: \(result.output)")
        #expect(result.status == 0, "child output: \(result.output)")
    }

    @Test(.enabled(if: isChild))
    func childConnectsWithoutDaemon() throws {
        do {
            _ = try AvahiServiceDiscovery()
            print("NO-DAEMON-RESULT: connected")
            Issue.record("AvahiServiceDiscovery() connected although the D-Bus address points nowhere")
        } catch let error as NearbyError {
            print("NO-DAEMON-RESULT: \(error.code) \(error.message)")
            #expect(error.code == .mediumUnavailable)
        }
    }
}
