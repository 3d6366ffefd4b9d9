import CPulseSimple
import NearbyAudio

/// Plays mono Float PCM (for example `AudioTokenEncoder` frames) through the sound server.
///
/// Talks to PulseAudio, or to PipeWire's PulseAudio service, through libpulse-simple. The server is `PULSE_SERVER`
/// unless given; the sink is the server's default unless given. Calls block; run them on a dedicated thread.
public final class PulseAudioPlayer: Sendable {
    private let stream: PulseAudioStream

    /// The samples per second of the stream.
    public var sampleRate: Int { stream.sampleRate }

    /// Opens a playback stream.
    ///
    /// - Parameters:
    ///   - server: a PulseAudio server string (`unix:/path`, `tcp:host`); nil uses `PULSE_SERVER` or the default.
    ///   - sink: the sink's name; nil uses the default sink.
    ///   - sampleRate: the stream's rate; the server converts to the sink's rate when they differ.
    ///   - applicationName: the client name the sound server shows for this program.
    ///   - streamName: the name the sound server shows for this stream.
    ///   - bufferSamples: how many samples the server may hold queued (the playback latency, and how long sound
    ///     goes on after the stream is closed); nil lets the server choose (about 2 s).
    /// - Throws: `NearbyError` `.mediumUnavailable` with a ``PulseAudioFailure`` cause.
    public init(
        server: String? = nil, sink: String? = nil, sampleRate: Int = AudioModemConfiguration.standard.sampleRate,
        applicationName: String = "swift-nearby", streamName: String = "Nearby audio token", bufferSamples: Int? = nil
    ) throws {
        stream = try PulseAudioStream(
            direction: PA_STREAM_PLAYBACK, server: server, device: sink, sampleRate: sampleRate,
            applicationName: applicationName, streamName: streamName, fragmentSamples: bufferSamples)
    }

    /// Queues `samples` for playback, blocking while the server's buffer is full.
    ///
    /// - Throws: `NearbyError` `.mediumUnavailable` with a ``PulseAudioFailure`` cause.
    public func play(_ samples: [Float]) throws { try stream.write(samples) }

    /// Blocks until everything queued has been played.
    ///
    /// - Throws: `NearbyError` `.mediumUnavailable` with a ``PulseAudioFailure`` cause.
    public func drain() throws { try stream.drain() }
}
