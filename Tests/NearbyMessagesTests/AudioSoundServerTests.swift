import Foundation
import NearbyCore
import NearbyPulseAudio
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

@testable import NearbyMessages

/// The audio medium through a real sound server: a private PulseAudio daemon with only a null sink. The publisher
/// plays its token into the sink, the subscriber (audio only) records the sink's monitor, optionally with synthetic
/// speech and noise played into the same sink by a third stream. The message itself travels over real Wi-Fi LAN
/// inside scripts/with-test-network.sh, otherwise over the in-memory medium.
@Suite("Audio medium through PulseAudio", .serialized, .timeLimit(.minutes(5)))
struct AudioSoundServerTests {
    @Test("publish audio → found from the monitor; publisher stops → lost", arguments: [false, true])
    func foundAndLostThroughTheSoundServer(withSpeechAndNoise: Bool) async throws {
        let daemon = try await PrivatePulseAudioServer()
        defer { daemon.stop() }
        try await withTestTimeout(60, "audio publish/subscribe through PulseAudio") {
            let service = "audio-\(UUID().uuidString.prefix(8))"
            let wifi = InMemoryMedium.Air()
            let mediums: MediumProvider? = inTestNetwork ? nil : FoundLostClockTests.inMemory(wifi)
            let publisher = try testManager(service, mediums: mediums)
            publisher.useAudio(PulseAudioMediumIO(server: daemon.server, sink: daemon.sink))
            let subscriber = try testManager(service, mediums: mediums)
            subscriber.useAudio(PulseAudioMediumIO(server: daemon.server, source: daemon.monitor))
            let statuses = LockedValue<[AudioDeviceStatus]>([])
            subscriber.audioStatusHandler = { status in statuses.withLock { $0.append(status) } }

            let background = withSpeechAndNoise ? BackgroundSound(server: daemon.server, sink: daemon.sink) : nil
            defer { background?.stop() }
            let audioOnly = MessageStrategy(mediums: .audio)
            let subscription = try await subscriber.subscribe(options: SubscribeOptions(strategy: audioOnly, ttl: nil))
            let collector = EventCollector()
            let collecting = collector.collect(subscription)
            defer { collecting.cancel() }
            let message = Message(text: "same room", namespace: "audio", type: "test")
            let publication = try await publisher.publish(message, options: PublishOptions(strategy: audioOnly, ttl: nil))
            #expect(await eventually(30) { collector.found { $0 == message } }, "\(collector.events)")
            await publication.cancel()
            #expect(await eventually(30) { collector.lost { $0 == message } }, "\(collector.events)")
            #expect(statuses.withLock { $0 }.isEmpty, "\(statuses.withLock { $0 })")
            await subscription.cancel()
        }
    }

    @Test("a subscription whose microphone does not exist reports noDevice")
    func missingMicrophone() async throws {
        let daemon = try await PrivatePulseAudioServer()
        defer { daemon.stop() }
        let subscriber = try testManager("audio-mic", mediums: FoundLostClockTests.inMemory(InMemoryMedium.Air()))
        subscriber.useAudio(PulseAudioMediumIO(server: daemon.server, source: "no-such-microphone"))
        let statuses = LockedValue<[AudioDeviceStatus]>([])
        subscriber.audioStatusHandler = { status in statuses.withLock { $0.append(status) } }
        let subscription = try await subscriber.subscribe(
            options: SubscribeOptions(strategy: MessageStrategy(mediums: .audio), ttl: nil))
        #expect(await eventually(20) { !statuses.withLock { $0 }.isEmpty })
        #expect(statuses.withLock { $0 }.first?.problem == .noDevice)
        #expect(statuses.withLock { $0 }.first?.hasError == true)
        await subscription.cancel()
    }
}
