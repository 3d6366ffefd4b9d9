import NearbyCore

extension Publication {
    /// Plays `token` in a loop (one modem frame, then a short silence) until the publication stops. When the
    /// speaker cannot be opened or fails, the problem goes to the manager's audio status handler and playing is
    /// retried every few seconds; the handler hears `hasError` false once it plays again.
    func startAudio(_ token: AudioToken, owner: MessageManager) {
        let settings = owner.audio.values.withLock { $0 }
        var logger = owner.logger
        logger[metadataKey: "audioToken"] = "\(token)"
        guard let samples = try? AudioTag.loop(for: token, gap: settings.gap) else {
            logger.error("cannot encode the audio token")
            return
        }
        let clock = owner.clock
        // Owner: this publication (`audioPlayback`); `cancel()` cancels and awaits it, `deinit` cancels it. It ends
        // when cancelled (the loop checks cancellation and the sleep and the player throw on it).
        let task = Task { [logger] in
            let failing = LockedValue(false)
            while !Task.isCancelled {
                do {
                    try await settings.io.playLoop(samples) {
                        logger.debug("playing the audio token")
                        if failing.withLock({ wasFailing in defer { wasFailing = false }; return wasFailing }) {
                            owner.reportAudio(AudioDeviceStatus(device: .speaker, hasError: false))
                        }
                    }
                    return
                } catch {
                    if Task.isCancelled { return }
                    failing.withLock { $0 = true }
                    owner.reportAudio(.failed(.speaker, error))
                }
                do { try await clock.sleep(for: settings.retryAfter) } catch { return }
            }
        }
        audioPlayback.withLock { $0 = task }
    }

    /// Waits until the audio loop (if any) has stopped and released the speaker; the task is already cancelled.
    func waitForAudioToStop() async {
        await audioPlayback.withLock { $0 }?.value
    }
}
