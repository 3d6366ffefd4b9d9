/// Sound in and out for the audio medium: the seam between Nearby Messages and a sound server.
///
/// Production uses ``PulseAudioMediumIO`` (PulseAudio or PipeWire through libpulse-simple); engine-level tests use
/// an in-memory "air" of PCM on a `ManualClock`. All PCM is mono `Float` at
/// `AudioModemConfiguration.standard.sampleRate` (48 kHz).
package protocol AudioMediumIO: Sendable {
    /// Plays `samples` over and over until the calling task is cancelled. Calls `onStarted` once the output is
    /// open (the problem, if one was reported, has cleared).
    ///
    /// - Throws: the output's error (for example a `NearbyError` with a `PulseAudioFailure` cause) when it cannot
    ///   be opened or fails while playing; `CancellationError` is not thrown, cancellation just returns.
    func playLoop(_ samples: [Float], onStarted: @escaping @Sendable () -> Void) async throws

    /// Opens the microphone (the default source).
    ///
    /// - Throws: the input's error when it cannot be opened.
    func openRecorder() async throws -> any AudioMediumRecording
}

/// An open microphone: one reader at a time calls ``read()`` in a loop, then ``close()``.
package protocol AudioMediumRecording: Sendable {
    /// The next chunk of recorded PCM, waiting until it was recorded.
    ///
    /// - Throws: the input's error when recording fails, `CancellationError` when the task is cancelled.
    func read() async throws -> [Float]
    /// Releases the microphone.
    func close()
}
