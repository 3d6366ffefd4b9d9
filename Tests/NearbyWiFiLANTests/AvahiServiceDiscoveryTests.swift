import NearbyTestSupport
import Foundation
import NearbyWiFiLAN
import NearbyWire
import Testing

/// End-to-end tests against a real avahi-daemon; they run only inside the private network namespace of
/// `scripts/with-test-network.sh`, where avahi-daemon publishes on `lo` (so services resolve to 127.0.0.1).
@Suite(.enabled(if: isInTestNetwork, "needs the private avahi-daemon of scripts/with-test-network.sh"), .timeLimit(.minutes(5)))
struct AvahiServiceDiscoveryTests {
    @Test func registerAndBrowseInOneProcessFindsTheServiceAndThenLosesIt() async throws {
        let discovery = try AvahiServiceDiscovery()
        let type = uniqueServiceType()
        let name = uniqueInstanceName("I0FCQ0T8n14")
        let txt: [String: [UInt8]] = ["n": Array("aGVsbG8td29ybGQ".utf8), "raw": [0x00, 0x3D, 0xFF, 0x80]]
        let recorder = await BrowseRecorder.start(discovery.browse(serviceType: type))
        defer { Task { await recorder.stop() } }

        let service = DNSSDService(instanceName: name, serviceType: type, port: 4242, txt: txt)
        let registration = try await withTestTimeout(10, "registering \(name)") { try await discovery.register(service) }
        let found = try await eventually("\(name) to be found") { await recorder.found(name) }
        #expect(found.serviceType == type)
        #expect(found.port == 4242)
        #expect(found.txt == txt)
        #expect(found.addresses.contains("127.0.0.1"))
        #expect(!found.hostName.isEmpty)
        #expect(found.interfaceIndex > 0)
        #expect(registration.failure == nil)

        await registration.cancel()
        await registration.cancel()  // idempotent
        _ = try await eventually("\(name) to be lost") { await recorder.lostAfterFound(name) ? true : nil }
        #expect(registration.failure == nil)
    }

    @Test func avahiBrowseCommandSeesOurRegistration() async throws {
        let discovery = try AvahiServiceDiscovery()
        let type = uniqueServiceType()
        let name = uniqueInstanceName("cli")
        let service = DNSSDService(
            instanceName: name, serviceType: type, port: 5151,
            txt: ["n": Array("ZW5kcG9pbnQ".utf8), "flag": []]
        )
        let registration = try await withTestTimeout(10, "registering \(name)") { try await discovery.register(service) }
        defer { withExtendedLifetime(registration) {} }

        let result = try await runChildProcess("/usr/bin/avahi-browse", ["-r", "-p", "-t", type], timeout: 10)
        #expect(result.status == 0)
        // -p lines: =;iface;proto;name;type;domain;host;address;port;"txt" "txt"
        let resolved = result.output.split(separator: "\n").filter { $0.hasPrefix("=;") }
            .map { $0.split(separator: ";", omittingEmptySubsequences: false) }
            .filter { $0.count >= 10 && $0[3] == name }
        #expect(!resolved.isEmpty, "avahi-browse output: \(result.output)")
        if let line = resolved.first {
            #expect(line[4] == type)
            // The daemon runs on lo only; right after a restart (MDNSRecoveryTests) avahi-browse may resolve the
            // IPv6 copy alone before it exits.
            #expect(resolved.contains { ["127.0.0.1", "::1"].contains($0[7]) }, "avahi-browse output: \(result.output)")
            #expect(line[8] == "5151")
            #expect(line[9].contains("\"n=ZW5kcG9pbnQ\""))
            #expect(line[9].contains("\"flag=\""))
        }
    }

    @Test func findsAServicePublishedByAvahiPublish() async throws {
        let discovery = try AvahiServiceDiscovery()
        let type = uniqueServiceType()
        let name = uniqueInstanceName("pub")
        let recorder = await BrowseRecorder.start(discovery.browse(serviceType: type))
        defer { Task { await recorder.stop() } }

        // "bare" has no '='; "dup" repeats, and its first occurrence wins.
        let publisher = try SpawnedProcess(
            "/usr/bin/avahi-publish", ["-s", name, type, "7373", "n=YWJj", "bare", "dup=first", "dup=second"]
        )
        let found: DNSSDResolvedService
        do {
            found = try await eventually("\(name) from avahi-publish to be found") { await recorder.found(name) }
        } catch {
            await publisher.kill()
            throw error
        }
        #expect(found.port == 7373)
        #expect(found.txt == ["n": Array("YWJj".utf8), "bare": [], "dup": Array("first".utf8)])
        #expect(found.addresses.contains("127.0.0.1"))

        await publisher.kill()
        _ = try await eventually("\(name) to be lost after avahi-publish was killed") {
            await recorder.lostAfterFound(name) ? true : nil
        }
    }

    @Test func overlongInstanceNameAndTXTAreRejected() async throws {
        let discovery = try AvahiServiceDiscovery()
        let type = uniqueServiceType()
        let longName = String(repeating: "a", count: DNSSDService.maximumInstanceNameLength + 1)
        await #expect {
            _ = try await discovery.register(DNSSDService(instanceName: longName, serviceType: type, port: 1))
        } throws: { error in
            (error as? NearbyError)?.code == .invalidArgument
        }
        let longValue = [UInt8](repeating: 0x41, count: DNSSDService.maximumTXTStringLength - 1)  // "n=" + 254 > 255
        await #expect {
            _ = try await discovery.register(
                DNSSDService(instanceName: "ok", serviceType: type, port: 1, txt: ["n": longValue])
            )
        } throws: { error in
            (error as? NearbyError)?.code == .invalidArgument
        }
    }

    @Test func secondRegistrationOfTheSameNameIsACollision() async throws {
        let discovery = try AvahiServiceDiscovery()
        // Avahi accepts identical records twice; a different port makes the second SRV record conflict.
        let service = DNSSDService(instanceName: uniqueInstanceName("dup"), serviceType: uniqueServiceType(), port: 9)
        let conflicting = DNSSDService(instanceName: service.instanceName, serviceType: service.serviceType, port: 10)
        let first = try await withTestTimeout(10, "first registration") { try await discovery.register(service) }
        defer { withExtendedLifetime(first) {} }
        await #expect {
            _ = try await withTestTimeout(10, "second registration") { try await discovery.register(conflicting) }
        } throws: { error in
            guard let error = error as? NearbyError else { return false }
            return error.code == .unknown && error.message.contains("collision")
        }
        #expect(first.failure == nil)
    }

    @Test func browsingAMalformedTypeFinishesWithInvalidArgument() async throws {
        let discovery = try AvahiServiceDiscovery()
        let recorder = await BrowseRecorder.start(discovery.browse(serviceType: "not a type"))
        _ = try await eventually("the stream to end") { await recorder.ended ? true : nil }
        #expect((await recorder.endError as? NearbyError)?.code == .invalidArgument)
    }

    @Test func cancellingTheConsumerStopsBrowsing() async throws {
        let discovery = try AvahiServiceDiscovery()
        let recorder = await BrowseRecorder.start(discovery.browse(serviceType: uniqueServiceType()))
        await recorder.stop()
        _ = try await eventually("the stream to end") { await recorder.ended ? true : nil }
        #expect(await recorder.endError == nil)
    }
}
