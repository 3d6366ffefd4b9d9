import Foundation
import NearbyAudio
import NearbyCore

/// The audio rule's part of a subscription's state: the gate and its timers (one per audible token).
struct AudioScanState: Sendable {
    var gate: AudioPresenceGate
    var timers = KeyedTimers<AudioToken>()
}

/// The audio medium on the subscriber's side. A subscription whose only medium is audio listens to the microphone,
/// decodes tokens and lets a publication found over Wi-Fi LAN through only while its token is heard (see
/// ``AudioPresenceGate``); every subscription strips the audio tag from what it discovers.
extension Subscription {
    /// Starts listening when the strategy's only medium is audio; call before discovery starts, so that every
    /// endpoint found goes through the gate. Microphone problems go to the manager's audio status handler and
    /// opening is retried; the handler hears `hasError` false once recording works again. A recording that worked
    /// and then fails (the sound server killed the stream because its source went away) is reopened at once, so
    /// what is reported is why the microphone cannot be used now (`noDevice` when no source is left), not that the
    /// old stream was killed; if reopening works, nothing is reported.
    func startAudioScanIfAudioOnly(_ owner: MessageManager) {
        guard options.strategy.mediums.isAudioOnly, options.deviceTypes.contains(.nearbyDevices) else { return }
        let settings = owner.audio.values.withLock { $0 }
        state.withLock { $0.audio = AudioScanState(gate: AudioPresenceGate(audibleFor: settings.audibleFor)) }
        let clock = self.clock
        tasks.spawn { [weak self] in
            let cleared = AudioDeviceStatus(device: .microphone, hasError: false)
            var failing = false
            var reopenAtOnce = false
            while !Task.isCancelled {
                do {
                    let recording = try await settings.io.openRecorder()
                    defer { recording.close() }
                    var decoder = AudioTokenDecoder()
                    while true {
                        let chunk = try await recording.read()
                        reopenAtOnce = true
                        if failing {
                            failing = false
                            owner.reportAudio(cleared)
                        }
                        for decoded in decoder.consume(chunk) {
                            guard let self else { return }
                            guard let token = AudioToken(decoded.token) else { continue }
                            self.audioStep { audio, now in audio.gate.heard(token, now: now) }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    if reopenAtOnce {
                        reopenAtOnce = false
                        owner.logger.debug("audio recording ended, opening it again", metadata: ["error": "\(error)"])
                        continue
                    }
                    if !failing {
                        failing = true
                        owner.reportAudio(.failed(.microphone, error))
                    }
                }
                do { try await clock.sleep(for: settings.retryAfter) } catch { return }
            }
        }
        owner.logger.debug("listening for audio tokens")
    }

    /// The envelope bytes of a discovered advertisement without its audio tag; an audio-only subscription also
    /// notes the endpoint's token.
    func audioTagStripped(_ id: String, _ advertisement: Data) -> Data {
        let (token, envelope) = AudioTag.split(advertisement)
        audioStep { audio, _ in audio.gate.advertised(id, token: token) }
        return envelope
    }

    /// For an audio-only subscription, hands `message` of endpoint `id` to the gate (it is presented while heard)
    /// and returns true; otherwise returns false (the caller presents it at once).
    func presentIfHeard(_ id: String, _ message: Message) -> Bool {
        guard state.withLock({ $0.audio != nil }) else { return false }
        audioStep { audio, now in audio.gate.offer(id, message, now: now) }
        return true
    }

    /// Discovery lost endpoint `id`: the gate forgets it.
    func audioEndpointGone(_ id: String) {
        audioStep { audio, _ in audio.gate.endpointGone(id) }
    }

    /// One step of the gate, under the subscription's lock together with the message tracker steps and timers it
    /// causes (so they run in its order); then the events are delivered. Does nothing without the audio rule.
    func audioStep(_ step: (inout AudioScanState, Duration) -> [AudioPresenceGate.Action]) {
        let clock = self.clock
        messageStep { state, now in
            guard var audio = state.audio else { return [] }
            var out: [FoundLostTracker<String, Message>.Action] = []
            for action in step(&audio, now) {
                switch action {
                case .present(let id, let message):
                    out += state.messages.present(id, message, now: now)
                case .gone(let id):
                    out += state.messages.sourceGone(id, now: now)
                case .startTimer(let token, let delay):
                    guard !state.stopped else { continue }
                    state.timerWork.append(audio.timers.start(token, after: delay, on: clock) { [weak self] token, generation in
                        self?.audioStep { audio, now in
                            audio.timers.fired(token, generation: generation) ? audio.gate.timerFired(token, now: now) : []
                        }
                    })
                }
            }
            state.audio = audio
            return out
        }
    }
}
