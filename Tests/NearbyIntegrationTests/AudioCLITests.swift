import Foundation
import NearbyTestSupport
import NearbyWire
import Testing

extension WiFiLANIntegration {
    /// `nearby publish --medium audio` and `nearby subscribe --medium audio` in separate processes, through a private
    /// PulseAudio daemon with only a null sink (the subscriber records its monitor) while this test plays synthetic
    /// speech and noise into the same sink; the message itself travels over Wi-Fi LAN.
    @Suite("nearby publish --medium audio ↔ nearby subscribe --medium audio", .timeLimit(.minutes(5)))
    struct AudioCLITests {
        @Test("found while the publisher plays; lost after it is told to stop")
        func audioPublishAndSubscribe() async throws {
            let daemon = try await PrivatePulseAudioServer()
            defer { daemon.stop() }
            let background = BackgroundSound(server: daemon.server, sink: daemon.sink)
            defer { background.stop() }
            try await withScratch(timeout: 60, "CLI audio publish/subscribe") { scratch in
                let serviceID = IntegrationEnvironment.uniqueServiceID("audio")
                let sound = [
                    "PULSE_SERVER": daemon.server, "PULSE_SINK": daemon.sink, "PULSE_SOURCE": daemon.monitor,
                    "SWIFT_BACKTRACE": "enable=no",
                ]
                let subscriber = try scratch.launchCLI(
                    "subscribe-audio", ["subscribe", "--service-id", serviceID, "--medium", "audio", "--json", "--verbose"],
                    environment: sound)
                let publisher = try scratch.launchCLI(
                    "publish-audio",
                    ["publish", "--service-id", serviceID, "--message", "same room", "--medium", "audio", "--json", "--verbose"],
                    environment: sound)
                let publishing = try await publisher.waitForEvent("publishing")
                #expect(publishing.description.contains("\"audio\""))
                let found = try await subscriber.waitForEvent("message_found", timeout: 30)
                #expect(found.string("message") == "same room")
                background.stop()

                // The publisher stops on SIGTERM and exits 0. (This once went unseen: the private PulseAudio daemon
                // was a Foundation `Process`, and pulseaudio closes the descriptors it inherits, which made
                // Foundation block its child-reaping thread on it. It is spawned with `SpawnedProcess` now.)
                publisher.signal(SIGTERM)
                #expect(try await publisher.waitForExit(timeout: 30) == 0, "\(publisher.diagnostics)")
                let lost = try await subscriber.waitForEvent("message_lost", timeout: 30)
                #expect(lost.string("message") == "same room")
                #expect(subscriber.events("audio_status").isEmpty, "\(subscriber.diagnostics)")
            }
        }
    }
}
