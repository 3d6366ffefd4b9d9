import CPulseSimple
import NearbyAudio

/// Records mono Float PCM (for an `AudioTokenDecoder`) from the sound server.
///
/// Talks to PulseAudio, or to PipeWire's PulseAudio service, through libpulse-simple. The server is `PULSE_SERVER`
/// unless given; the source is the server's default unless given (a sink's monitor is `<sink>.monitor`). Calls
/// block; run them on a dedicated thread.
public final class PulseAudioRecorder: Sendable {
    private let stream: PulseAudioStream

    /// The samples per second of the stream.
    public var sampleRate: Int { stream.sampleRate }

    /// Opens a recording stream.
    ///
    /// - Parameters:
    ///   - server: a PulseAudio server string (`unix:/path`, `tcp:host`); nil uses `PULSE_SERVER` or the default.
    ///   - source: the source's name; nil uses the default source.
    ///   - sampleRate: the stream's rate; the server converts from the source's rate when they differ.
    ///   - fragmentSamples: how many samples the server gathers before it sends them (the recording latency).
    ///   - applicationName: the client name the sound server shows for this program.
    ///   - streamName: the name the sound server shows for this stream.
    /// - Throws: `NearbyError` `.mediumUnavailable` with a ``PulseAudioFailure`` cause.
    public init(
        server: String? = nil, source: String? = nil, sampleRate: Int = AudioModemConfiguration.standard.sampleRate,
        fragmentSamples: Int = 2_400, applicationName: String = "swift-nearby",
        streamName: String = "Nearby audio scan"
    ) throws {
        stream = try PulseAudioStream(
            direction: PA_STREAM_RECORD, server: server, device: source, sampleRate: sampleRate,
            applicationName: applicationName, streamName: streamName, fragmentSamples: fragmentSamples)
    }

    /// The next `count` samples, blocking until they were recorded.
    ///
    /// - Throws: `NearbyError` `.mediumUnavailable` with a ``PulseAudioFailure`` cause.
    public func record(count: Int) throws -> [Float] { try stream.read(count: count) }
}
