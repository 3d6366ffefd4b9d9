import NearbyTestSupport
import Foundation
import NearbyWiFiLAN
import NearbyWire
import Testing

/// What happens when avahi-daemon goes away and comes back: registrations report it and are published again,
/// browse streams stay open, and a registration made while it is away is kept and published once it is back. The daemon here is a private one (see
/// ``PrivateAvahiDaemon``), and the client is a child process (this test binary, running only
/// ``childLosesAndRegainsTheDaemon()``), because libdbus reads `DBUS_SYSTEM_BUS_ADDRESS` once per process.
@Suite(.timeLimit(.minutes(5))) struct AvahiDaemonDisconnectTests {
    static let childMarker = "NEARBY_TEST_DISCONNECT_CHILD"
    static let isChild = ProcessInfo.processInfo.environment[childMarker] != nil

    @Test(.enabled(if: isInTestNetwork && !isChild, "needs the test network of scripts/with-test-network.sh"))
    func registrationAndBrowseSurviveTheDaemonDyingAndWorkAgainAfterItRestarts() async throws {
        let daemon = try await PrivateAvahiDaemon.start()
        let outputURL = daemon.directory.appendingPathComponent("child.out")
        var environment = ProcessInfo.processInfo.environment
        environment[Self.childMarker] = "1"
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = daemon.busAddress
        environment["NEARBY_TEST_NETNS"] = nil
        let childOutput = { (try? String(contentsOf: outputURL, encoding: .utf8)) ?? "" }

        var child: SpawnedProcess?
        do {
            child = try SpawnedProcess(
                "/proc/self/exe",
                ["--testing-library", "swift-testing", "--filter", "childLosesAndRegainsTheDaemon"],
                environment: environment,
                outputPath: outputURL.path
            )
            _ = try await eventually(within: 30, "the child to register and browse") {
                childOutput().contains("CHILD-READY") ? true : nil
            }
            await daemon.killAvahi()
            _ = try await eventually(within: 30, "the child to notice the daemon is gone") {
                childOutput().contains("CHILD-DAEMON-GONE") ? true : nil
            }
            try await daemon.startAvahi()
            _ = try await child?.waitForExit(within: 60, "the child to finish")
        } catch {
            await child?.kill()
            let text = childOutput()
            await daemon.stop()
            Issue.record("child output: \(text)")
            throw error
        }
        let text = childOutput()
        await daemon.stop()
        #expect(text.contains("CHILD-REGISTRATION-FAILURE: mediumUnavailable"), "child output: \(text)")
        #expect(text.contains("CHILD-STREAM-ENDED: no"), "child output: \(text)")
        #expect(text.contains("CHILD-REGISTER-WHILE-GONE: kept, mediumUnavailable"), "child output: \(text)")
        #expect(text.contains("CHILD-REPUBLISHED"), "child output: \(text)")
        #expect(text.contains("CHILD-WAITING-REGISTRATION-PUBLISHED"), "child output: \(text)")
        #expect(text.contains("CHILD-STREAM-STILL-OPEN"), "child output: \(text)")
        #expect(text.contains("CHILD-RECONNECTED"), "child output: \(text)")
        #expect(child?.exitStatus == 0, "child output: \(text)")
    }

    /// Writes a line for the parent straight to stdout (print would buffer it, since stdout is a file).
    private static func report(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    @Test(.enabled(if: isChild))
    func childLosesAndRegainsTheDaemon() async throws {
        let discovery = try AvahiServiceDiscovery()
        let type = uniqueServiceType()
        let service = DNSSDService(instanceName: uniqueInstanceName("gone"), serviceType: type, port: 2020)
        let registration = try await withTestTimeout(10, "registering") { try await discovery.register(service) }
        // The private daemon uses no interface, so this browse sees nothing; it must outlive the daemon's restart.
        let recorder = await BrowseRecorder.start(discovery.browse(serviceType: type))
        Self.report("CHILD-READY")

        let failure = try await eventually(within: 20, "the registration to report the daemon gone") {
            registration.failure
        }
        Self.report("CHILD-REGISTRATION-FAILURE: \(failure.code.rawValue)")
        Self.report("CHILD-STREAM-ENDED: \(await recorder.ended ? "yes \(String(describing: await recorder.endError))" : "no")")
        // Registering while the daemon is gone returns at once with a registration that says why it is not
        // published yet; it is published once the daemon is back.
        var waiting: DNSSDRegistration?
        do {
            waiting = try await withTestTimeout(10, "registering while the daemon is gone") {
                try await discovery.register(
                    DNSSDService(instanceName: uniqueInstanceName("while-gone"), serviceType: type, port: 1))
            }
            Self.report("CHILD-REGISTER-WHILE-GONE: kept, \(waiting?.failure?.code.rawValue ?? "no failure")")
        } catch {
            Self.report("CHILD-REGISTER-WHILE-GONE: threw \((error as? NearbyError)?.code.rawValue ?? "\(error)")")
        }
        Self.report("CHILD-DAEMON-GONE")

        // The parent restarts the daemon: the registration is published again without any call, the browse goes on.
        _ = try await eventually(within: 30, "the registration to be published again") {
            registration.failure == nil ? true : nil
        }
        Self.report("CHILD-REPUBLISHED")
        if let waiting {
            _ = try await eventually(within: 30, "the registration made while the daemon was gone to be published") {
                waiting.failure == nil ? true : nil
            }
            Self.report("CHILD-WAITING-REGISTRATION-PUBLISHED")
            await waiting.cancel()
        }
        if await !recorder.ended { Self.report("CHILD-STREAM-STILL-OPEN") }
        let again = try await eventually(within: 30, "registering after the daemon restarted") {
            try? await withTestTimeout(5, "registering") {
                try await discovery.register(
                    DNSSDService(instanceName: uniqueInstanceName("back"), serviceType: type, port: 2021))
            }
        }
        #expect(again.failure == nil)
        await again.cancel()
        await registration.cancel()
        await recorder.stop()
        Self.report("CHILD-RECONNECTED")
    }
}
