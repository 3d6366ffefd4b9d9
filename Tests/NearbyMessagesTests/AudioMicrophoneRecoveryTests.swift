import Foundation
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

@testable import NearbyMessages

/// The microphone going away and coming back on a real sound server. Two private PulseAudio daemons: the "room"
/// (a null sink the publisher plays into) and the subscriber's "listener", whose only device is a tunnel source
/// (`module-tunnel-source`) recording the room's monitor: its microphone. Unloading the tunnel leaves the listener
/// without any source (one server alone would move the recording to the sink's monitor instead), loading it again
/// brings the microphone back. The message travels over real Wi-Fi LAN inside scripts/with-test-network.sh,
/// otherwise over the in-memory medium.
@Suite("Audio microphone removed and restored through PulseAudio", .serialized, .timeLimit(.minutes(5)))
struct AudioMicrophoneRecoveryTests {
    @Test("microphone source removed → noDevice reported and the message lost; restored → cleared, found again")
    func microphoneRemovedAndRestored() async throws {
        let room = try await PrivatePulseAudioServer()
        defer { room.stop() }
        let listener = try await PrivatePulseAudioServer(nullSink: false)
        defer { listener.stop() }
        let loadMicrophone = [
            "load-module", "module-tunnel-source", "server=\(room.server)", "source=\(room.monitor)",
            "source_name=microphone",
        ]
        let module = try await listener.pactl(loadMicrophone)

        try await withTestTimeout(60, "microphone removed and restored") {
            let service = "audio-mic-\(UUID().uuidString.prefix(8))"
            let mediums: MediumProvider? = inTestNetwork ? nil : FoundLostClockTests.inMemory(InMemoryMedium.Air())
            let publisher = try testManager(service, mediums: mediums)
            publisher.useAudio(PulseAudioMediumIO(server: room.server, sink: room.sink))
            let subscriber = try testManager(service, mediums: mediums)
            // The default source: whatever microphone the listener has.
            subscriber.useAudio(
                PulseAudioMediumIO(server: listener.server), audibleFor: .seconds(2), retryAfter: .milliseconds(300))
            // The statuses, and what Google's spelling hears of them (microphonePermissionErrorHandler).
            let gns = LockedValue<[Bool]>([])
            let params = GNSMessageManagerParams()
            params.microphonePermissionErrorHandler = { hasError in gns.withLock { $0.append(hasError) } }
            let googleShaped = GNSMessageManager(messageManager: subscriber, params: params)
            let forward = try #require(subscriber.audioStatusHandler)
            let statuses = LockedValue<[AudioDeviceStatus]>([])
            subscriber.audioStatusHandler = { status in
                statuses.withLock { $0.append(status) }
                forward(status)
            }

            let audioOnly = MessageStrategy(mediums: .audio)
            let subscription = try await subscriber.subscribe(options: SubscribeOptions(strategy: audioOnly, ttl: nil))
            let collector = EventCollector()
            let collecting = collector.collect(subscription)
            defer { collecting.cancel() }
            let message = Message(text: "heard again", namespace: "audio", type: "test")
            let publication = try await publisher.publish(message, options: PublishOptions(strategy: audioOnly, ttl: nil))
            #expect(await eventually(30) { collector.found { $0 == message } }, "\(collector.events)")
            #expect(statuses.withLock { $0 }.isEmpty, "\(statuses.withLock { $0 })")

            try await listener.pactl(["unload-module", module])
            #expect(await eventually(20) { !statuses.withLock { $0 }.isEmpty }, "no microphone status")
            let problem = try #require(statuses.withLock { $0 }.first)
            #expect(problem.device == .microphone)
            #expect(problem.hasError)
            #expect(problem.problem == .noDevice, "\(problem)")
            #expect(await eventually(20) { collector.lost { $0 == message } }, "\(collector.events)")

            try await listener.pactl(loadMicrophone)
            #expect(await eventually(20) { statuses.withLock { $0 }.map(\.hasError) == [true, false] },
                    "\(statuses.withLock { $0 })")
            #expect(await eventually(30) {
                let events = collector.events
                guard let lost = events.firstIndex(where: { $0.kind == .lost && $0.message == message }) else { return false }
                return events[(lost + 1)...].contains { $0.kind == .found && $0.message == message }
            }, "\(collector.events)")
            #expect(gns.withLock { $0 } == [true, false])
            withExtendedLifetime(googleShaped) {}
            await publication.cancel()
            await subscription.cancel()
        }
    }
}
