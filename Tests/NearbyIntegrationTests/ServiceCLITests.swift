import Foundation
import NearbyTestSupport
import Testing

extension WiFiLANIntegration {
    /// `nearby service` and its clients in separate processes (Nearby Messages over Wi-Fi LAN, through the service).
    @Suite("nearby service", .enabled(if: IntegrationEnvironment.inTestNetwork), .timeLimit(.minutes(5)))
    struct ServiceCLITests {
        /// A fake `notify-send` in `scratch` that appends its arguments, one per line, to the returned file.
        static func fakeNotifySend(_ scratch: Scratch) throws -> (bin: URL, calls: URL) {
            let bin = try scratch.directory("bin")
            let calls = scratch.root.appendingPathComponent("notify-calls")
            let script = bin.appendingPathComponent("notify-send")
            try "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '\(calls.path)'\n"
                .write(to: script, atomically: true, encoding: .utf8)
            chmod(script.path, 0o755)
            return (bin, calls)
        }

        @Test("two clients: one publishes, the other subscribes and gets found as a JSON line; notify-send runs; lost when the publisher exits")
        func publishAndSubscribeThroughTheService() async throws {
            try await withScratch(timeout: 90, "nearby service publish/subscribe") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("svc")
                let socket = scratch.root.appendingPathComponent("svc.sock").path
                let state = scratch.root.appendingPathComponent("state/service.json").path
                let (bin, calls) = try Self.fakeNotifySend(scratch)
                let path = bin.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
                // No session bus: notify-send is the notifier (D-Bus notifications: DesktopNotifierTests).
                let service = try scratch.launchCLI(
                    "service", ["service", "--socket", socket, "--state", state, "--notify", "--json"],
                    environment: ["PATH": path, "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(scratch.root.path)/no-bus"])
                let started = try await service.waitForEvent("service_started")
                #expect(started.bool("notify") == true && started.int("restored") == 0)
                #expect(started.string("notifier") == "notify-send")

                let publisher = try scratch.launchCLI("publisher", [
                    "service", "publish", "--socket", socket, "--service-id", serviceID, "--message", "hello service",
                    "--namespace", "ns", "--json",
                ])
                let published = try await publisher.waitForEvent("published")
                #expect(published.string("handle")?.hasPrefix("pub-") == true)
                let subscriber = try scratch.launchCLI("subscriber", [
                    "service", "subscribe", "--socket", socket, "--service-id", serviceID, "--json",
                ])
                let subscribed = try await subscriber.waitForEvent("subscribed")
                let found = try await subscriber.waitForEvent("message_found", timeout: 45)
                #expect(found.string("message") == "hello service" && found.string("namespace") == "ns")
                #expect(found.string("subscription") == subscribed.string("handle"))
                #expect(found.string("service_id") == serviceID)

                let notified = try await eventually(within: 20, "notify-send to be called") { () -> String? in
                    let text = (try? String(contentsOf: calls, encoding: .utf8)) ?? ""
                    return text.contains("Nearby message found") ? text : nil
                }
                #expect(notified.contains("--app-name=nearby") && notified.contains("[ns] hello service"), "\(notified)")

                publisher.signal(SIGTERM)
                #expect(try await publisher.waitForExit() == 0, "\(publisher.diagnostics)")
                let lost = try await subscriber.waitForEvent("message_lost", timeout: 45)
                #expect(lost.string("message") == "hello service")

                service.signal(SIGTERM)
                #expect(try await service.waitForExit() == 0, "\(service.diagnostics)")
                try await service.waitForEvent("service_stopped")
                #expect(try await subscriber.waitForExit() == 1)  // the service closed its connection
                #expect(!FileManager.default.fileExists(atPath: socket))
            }
        }

        @Test("nearby publish/subscribe --via-service use the running service: the in-process event lines; exit 1 without it or when it stops")
        func publishAndSubscribeViaService() async throws {
            try await withScratch(timeout: 90, "nearby publish/subscribe --via-service") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("svc-via")
                let socket = scratch.root.appendingPathComponent("svc.sock").path
                let none = try scratch.launchCLI("no-service", [
                    "subscribe", "--via-service", "--socket", socket, "--service-id", serviceID, "--json",
                ])
                #expect(try await none.waitForExit() == 1)
                #expect(none.diagnostics.contains("no nearby service answers on \(socket)"), "\(none.diagnostics)")
                let refused = try scratch.launchCLI("refused", [
                    "publish", "--via-service", "--medium", "wifi-lan", "--service-id", serviceID, "--message", "x",
                ])
                #expect(try await refused.waitForExit() != 0)
                #expect(refused.diagnostics.contains("--medium cannot be used with --via-service"), "\(refused.diagnostics)")

                let service = try scratch.launchCLI("service", [
                    "service", "--socket", socket, "--state", scratch.root.appendingPathComponent("state.json").path, "--json",
                ])
                try await service.waitForEvent("service_started")
                let publisher = try scratch.launchCLI("publisher", [
                    "publish", "--via-service", "--socket", socket, "--service-id", serviceID, "--message", "via the service",
                    "--namespace", "ns", "--type", "t", "--json",
                ])
                let publishing = try await publisher.waitForEvent("publishing")
                #expect(publishing.int("size") == 15 && publishing.string("namespace") == "ns" && publishing.string("type") == "t")
                #expect(publishing.string("handle")?.hasPrefix("pub-") == true && publishing.bool("via_service") == true)
                let subscriber = try scratch.launchCLI("subscriber", [
                    "subscribe", "--via-service", "--socket", socket, "--service-id", serviceID, "--namespace", "ns", "--json",
                ])
                let found = try await subscriber.waitForEvent("message_found", timeout: 45)
                // The fields of the in-process `nearby subscribe`, and only those.
                #expect(Set(found.fields.keys) == ["event", "message", "message_hex", "namespace", "type", "size"], "\(found)")
                #expect(found.string("message") == "via the service" && found.string("type") == "t" && found.int("size") == 15)

                publisher.signal(SIGTERM)
                #expect(try await publisher.waitForExit() == 0, "\(publisher.diagnostics)")
                let lost = try await subscriber.waitForEvent("message_lost", timeout: 45)
                #expect(lost.string("message") == "via the service")

                service.signal(SIGTERM)
                #expect(try await service.waitForExit() == 0, "\(service.diagnostics)")
                #expect(try await subscriber.waitForExit() == 1)
                #expect(subscriber.diagnostics.contains("lost the nearby service"), "\(subscriber.diagnostics)")
            }
        }

        @Test("background publication and subscription survive a restart (SIGTERM, start again): found again without re-adding")
        func restoreAfterRestart() async throws {
            try await withScratch(timeout: 90, "nearby service restart") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("svc-restart")
                let socket = scratch.root.appendingPathComponent("svc.sock").path
                let state = scratch.root.appendingPathComponent("state/service.json")
                let run = ["service", "run", "--socket", socket, "--state", state.path, "--json"]
                let first = try scratch.launchCLI("service-1", run)
                try await first.waitForEvent("service_started")

                let publish = try scratch.launchCLI("publish-bg", [
                    "service", "publish", "--socket", socket, "--service-id", serviceID, "--message", "still here",
                    "--background", "--json",
                ])
                let pubHandle = try #require(try await publish.waitForEvent("published").string("handle"))
                #expect(try await publish.waitForExit() == 0, "\(publish.diagnostics)")
                let subscribe = try scratch.launchCLI("subscribe-bg", [
                    "service", "subscribe", "--socket", socket, "--service-id", serviceID, "--background", "--json",
                ])
                let subHandle = try #require(try await subscribe.waitForEvent("subscribed").string("handle"))
                #expect(try await subscribe.waitForExit() == 0, "\(subscribe.diagnostics)")

                let list = try scratch.launchCLI("list", ["service", "list", "--socket", socket, "--json"])
                #expect(try await list.waitForExit() == 0, "\(list.diagnostics)")
                #expect(list.events("publication").map { $0.string("handle") } == [pubHandle])
                #expect(list.events("subscription").map { $0.string("handle") } == [subHandle])

                first.signal(SIGTERM)
                #expect(try await first.waitForExit() == 0, "\(first.diagnostics)")
                let saved = try String(contentsOf: state, encoding: .utf8)
                #expect(saved.contains(pubHandle) && saved.contains(subHandle), "\(saved)")

                let second = try scratch.launchCLI("service-2", run)
                let started = try await second.waitForEvent("service_started")
                #expect(started.int("restored") == 2, "\(second.diagnostics)")
                let watch = try scratch.launchCLI("watch", ["service", "watch", "--socket", socket, "--json"])
                let found = try await watch.waitForEvent("message_found", timeout: 45)
                #expect(found.string("subscription") == subHandle && found.string("message") == "still here")

                let unsubscribe = try scratch.launchCLI("unsubscribe", ["service", "unsubscribe", subHandle, "--socket", socket])
                #expect(try await unsubscribe.waitForExit() == 0, "\(unsubscribe.diagnostics)")
                // The watcher hears that the subscription ended, and why.
                let ended = try await watch.waitForEvent("subscription_ended")
                #expect(ended.string("subscription") == subHandle && ended.string("reason") == "unsubscribed")
                // An attached subscription whose TTL runs out ends its command (exit 0) after saying so.
                let brief = try scratch.launchCLI("subscribe-ttl", [
                    "service", "subscribe", "--socket", socket, "--service-id", serviceID, "--ttl", "1", "--json",
                ])
                let briefHandle = try #require(try await brief.waitForEvent("subscribed").string("handle"))
                let expired = try await brief.waitForEvent("subscription_ended", timeout: 30)
                #expect(expired.string("subscription") == briefHandle && expired.string("reason") == "expired")
                #expect(try await brief.waitForExit(timeout: 30) == 0, "\(brief.diagnostics)")
                let after = try String(contentsOf: state, encoding: .utf8)
                #expect(!after.contains(subHandle) && after.contains(pubHandle), "\(after)")
                let missing = try scratch.launchCLI("unsubscribe-again", ["service", "unsubscribe", subHandle, "--socket", socket])
                #expect(try await missing.waitForExit() == 1)
                #expect(missing.diagnostics.contains("no subscription named \(subHandle)"), "\(missing.diagnostics)")
            }
        }
    }
}
