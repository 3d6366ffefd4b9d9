import Foundation
import NearbyConnections
import NearbyCore
import NearbyTestSupport
import NearbyTesting
import NearbyWire
import Testing

@testable import NearbyMessages

/// The audio medium's rule over an in-memory air of PCM on a manual clock, with the message itself on the
/// in-memory Wi-Fi LAN medium: an audio-only subscription reports a publication only while it hears its token.
@Suite("Audio medium over an in-memory air", .timeLimit(.minutes(5)))
struct AudioMediumTests {
    static let message = Message(content: Data("in this room".utf8), namespace: "ns", type: "audio")
    static let audioOnly = MessageStrategy(mediums: .audio)

    /// A manager on `clock` whose Wi-Fi LAN is `wifi` and whose sound is `air`.
    static func manager(
        _ wifi: InMemoryMedium.Air, _ air: InMemoryAudioAir, status: (@Sendable (AudioDeviceStatus) -> Void)? = nil
    ) throws -> MessageManager {
        let manager = try testManager("audio", mediums: FoundLostClockTests.inMemory(wifi), clock: NearbyClock(air.clock))
        manager.useAudio(air.device, audibleFor: .seconds(5), gap: .milliseconds(200), retryAfter: .seconds(2))
        manager.audioStatusHandler = status
        return manager
    }

    static func publish(_ manager: MessageManager, _ strategy: MessageStrategy = audioOnly) async throws -> Publication {
        try await manager.publish(message, options: PublishOptions(strategy: strategy, ttl: nil))
    }

    static func subscribe(_ manager: MessageManager, _ strategy: MessageStrategy = audioOnly) async throws -> Subscription {
        try await manager.subscribe(options: SubscribeOptions(strategy: strategy, ttl: nil))
    }

    @Test("audio only: found while the token is heard, lost when the sound stops though the advertisement stays",
          .timeLimit(.minutes(1)))
    func foundWhileHeardLostWhenSilent() async throws {
        let air = InMemoryAudioAir(clock: ManualClock())
        let wifi = InMemoryMedium.Air()
        let subscription = try await Self.subscribe(try Self.manager(wifi, air))
        let publication = try await Self.publish(try Self.manager(wifi, air))
        #expect(await air.run(for: .seconds(10), recorders: 1) { subscription.foundMessages == [Self.message] })
        #expect(air.playerCount == 1)

        air.mutePlayers(true)
        await air.run(for: .seconds(3), recorders: 1)
        #expect(subscription.foundMessages == [Self.message], "within 5 s of the last frame heard it stays found")
        #expect(await air.run(for: .seconds(10), recorders: 1) { subscription.foundMessages.isEmpty })
        #expect(!publication.isCancelled)

        air.mutePlayers(false)
        #expect(await air.run(for: .seconds(10), recorders: 1) { subscription.foundMessages == [Self.message] })
        await publication.cancel()
        #expect(air.playerCount == 0)
        await subscription.cancel()
    }

    @Test("audio only: a publication that plays no token is never found; one whose token is heard is",
          .timeLimit(.minutes(1)))
    func silentPublicationNotFound() async throws {
        let air = InMemoryAudioAir(clock: ManualClock())
        let wifi = InMemoryMedium.Air()
        let subscription = try await Self.subscribe(try Self.manager(wifi, air))
        let silent = Message(text: "no sound", namespace: "ns", type: "audio")
        let publisher = try Self.manager(wifi, air)
        let wifiOnly = try await publisher.publish(
            silent, options: PublishOptions(strategy: MessageStrategy(mediums: .wifiLAN), ttl: nil))
        let audible = try await Self.publish(publisher)
        #expect(await air.run(for: .seconds(10), recorders: 1) { subscription.foundMessages == [Self.message] })
        await air.run(for: .seconds(3), recorders: 1)
        #expect(subscription.foundMessages == [Self.message])
        #expect(subscription.handledEndpoints.withLock { $0.found.contains(wifiOnly.endpointID) })
        await wifiOnly.cancel()
        await audible.cancel()
        await subscription.cancel()
    }

    @Test("with Wi-Fi LAN as well, an audio publication is found without sound and no microphone is opened",
          .timeLimit(.minutes(1)))
    func mixedStrategyBehavesAsBefore() async throws {
        let air = InMemoryAudioAir(clock: ManualClock())
        let wifi = InMemoryMedium.Air()
        air.mutePlayers(true)
        let subscription = try await Self.subscribe(
            try Self.manager(wifi, air), MessageStrategy(mediums: [.audio, .wifiLAN]))
        var events = subscription.events.makeAsyncIterator()
        let publication = try await Self.publish(try Self.manager(wifi, air), MessageStrategy(mediums: [.audio, .wifiLAN]))
        #expect(await events.next() == MessageEvent(kind: .found, message: Self.message))
        #expect(await eventually { air.playerCount == 1 })
        #expect(air.recorderCount == 0)
        await publication.cancel()
        #expect(await events.next() == MessageEvent(kind: .lost, message: Self.message))
        await subscription.cancel()
    }

    @Test("audio only: the token is heard through Gaussian noise and speech-like background", .timeLimit(.minutes(1)))
    func heardThroughNoiseAndSpeech() async throws {
        let air = InMemoryAudioAir(clock: ManualClock())
        let wifi = InMemoryMedium.Air()
        air.setNoise(0.05)
        air.addBackground(SyntheticSound.speechAndNoise(seconds: 4, sampleRate: 48_000, seed: 0xA1_0004), loops: true)
        let subscription = try await Self.subscribe(try Self.manager(wifi, air))
        let publication = try await Self.publish(try Self.manager(wifi, air))
        #expect(await air.run(for: .seconds(15), recorders: 1) { subscription.foundMessages == [Self.message] })
        await publication.cancel()
        await subscription.cancel()
    }

    @Test("a missing microphone is reported, retried, and reported cleared when it comes back", .timeLimit(.minutes(1)))
    func microphoneProblemAndClearing() async throws {
        let air = InMemoryAudioAir(clock: ManualClock())
        let wifi = InMemoryMedium.Air()
        let statuses = LockedValue<[AudioDeviceStatus]>([])
        air.setMicrophoneProblem(.noDevice)
        let subscription = try await Self.subscribe(try Self.manager(wifi, air) { status in statuses.withLock { $0.append(status) } })
        let publication = try await Self.publish(try Self.manager(wifi, air))
        #expect(await eventually { !statuses.withLock { $0 }.isEmpty })
        await air.run(for: .seconds(5))
        let failed = try #require(statuses.withLock { $0 }.first)
        #expect(failed.device == .microphone)
        #expect(failed.hasError)
        #expect(failed.problem == .noDevice)
        #expect(failed.error?.code == .mediumUnavailable)
        #expect(statuses.withLock { $0 }.count == 1, "retries do not repeat the same report")
        #expect(subscription.foundMessages.isEmpty)

        air.setMicrophoneProblem(nil)
        #expect(await air.run(for: .seconds(10)) { air.recorderCount == 1 }, "the retry opens the microphone")
        #expect(await air.run(for: .seconds(10), recorders: 1) { subscription.foundMessages == [Self.message] })
        #expect(statuses.withLock { $0 }.map(\.hasError) == [true, false])
        #expect(statuses.withLock { $0 }.last?.device == .microphone)

        air.setMicrophoneProblem(.permissionDenied)  // fails while recording
        #expect(await eventually { statuses.withLock { $0 }.count == 3 })
        #expect(statuses.withLock { $0 }.last?.problem == .permissionDenied)
        #expect(await air.run(for: .seconds(10)) { subscription.foundMessages.isEmpty })
        await publication.cancel()
        await subscription.cancel()
    }

    @Test("a speaker that cannot be opened is reported, and cleared once the token plays", .timeLimit(.minutes(1)))
    func speakerProblemAndClearing() async throws {
        let air = InMemoryAudioAir(clock: ManualClock())
        let wifi = InMemoryMedium.Air()
        let statuses = LockedValue<[AudioDeviceStatus]>([])
        air.setSpeakerProblem(.deviceBusy)
        let publisher = try Self.manager(wifi, air) { status in statuses.withLock { $0.append(status) } }
        let publication = try await Self.publish(publisher)
        #expect(await eventually { !statuses.withLock { $0 }.isEmpty })
        #expect(statuses.withLock { $0 }.first?.problem == .deviceBusy)
        #expect(statuses.withLock { $0 }.first?.device == .speaker)
        air.setSpeakerProblem(nil)
        await air.clock.waitForSleepers(atLeast: 1)  // the retry
        air.clock.advance(by: .seconds(2))
        #expect(await eventually { air.playerCount == 1 })
        #expect(statuses.withLock { $0 }.map(\.hasError) == [true, false])
        await publication.cancel()
    }

    @Test("plain endpoint info cannot travel with audio")
    func plainEndpointInfoRefused() async throws {
        let air = InMemoryAudioAir(clock: ManualClock())
        let manager = try Self.manager(InMemoryMedium.Air(), air)
        let code = await nearbyErrorCode {
            _ = try await manager.publish(
                Message(content: Data("x".utf8)),
                options: PublishOptions(strategy: Self.audioOnly, plainEndpointInfo: true))
        }
        #expect(code == .invalidArgument)
    }
}
