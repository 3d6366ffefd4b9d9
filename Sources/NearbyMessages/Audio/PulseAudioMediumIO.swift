import Dispatch
import NearbyCore
import NearbyPulseAudio

/// The audio medium's sound through the system's sound server: `PULSE_SERVER` (else the default server) and its
/// default sink and source (`PULSE_SINK` / `PULSE_SOURCE` override them, as for every libpulse client).
///
/// libpulse-simple calls block, so each player and recorder runs them on a serial dispatch queue of its own, never
/// on Swift concurrency's shared pool.
package struct PulseAudioMediumIO: AudioMediumIO {
    /// A PulseAudio server string, or `nil` for `PULSE_SERVER` / the default.
    package var server: String?
    /// The sink's name, or `nil` for the default sink.
    package var sink: String?
    /// The source's name, or `nil` for the default source.
    package var source: String?

    /// Samples per write while playing (100 ms): how soon a cancelled loop notices it should stop.
    static let writeChunk = 4_800
    /// Samples per read while recording (50 ms).
    static let readChunk = 2_400

    /// Creates the I/O of the given server, sink and source (each `nil` for the default).
    package init(server: String? = nil, sink: String? = nil, source: String? = nil) {
        self.server = server
        self.sink = sink
        self.source = source
    }

    package func playLoop(_ samples: [Float], onStarted: @escaping @Sendable () -> Void) async throws {
        guard !samples.isEmpty else { return }
        let stop = LockedValue(false)
        let (server, sink) = (server, sink)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                DispatchQueue(label: "nearby.audio.player").async {
                    continuation.resume(with: Result {
                        let player = try PulseAudioPlayer(
                            server: server, sink: sink, bufferSamples: Self.writeChunk * 2)
                        onStarted()
                        var offset = 0
                        while !stop.withLock({ $0 }) {
                            var chunk = [Float]()
                            chunk.reserveCapacity(Self.writeChunk)
                            while chunk.count < Self.writeChunk {
                                let take = min(Self.writeChunk - chunk.count, samples.count - offset)
                                chunk += samples[offset..<(offset + take)]
                                offset = (offset + take) % samples.count
                            }
                            try player.play(chunk)
                        }
                    })
                }
            }
        } onCancel: {
            stop.withLock { $0 = true }
        }
    }

    package func openRecorder() async throws -> any AudioMediumRecording {
        let queue = DispatchQueue(label: "nearby.audio.recorder")
        let (server, source) = (server, source)
        let recorder: PulseAudioRecorder = try await withHandoffContinuation { continuation in
            queue.async {
                continuation.resume(with: Result {
                    try PulseAudioRecorder(server: server, source: source, fragmentSamples: Self.readChunk)
                })
            }
        }
        return Recording(recorder: recorder, queue: queue)
    }

    /// An open PulseAudio recording stream; reads run on its serial queue.
    struct Recording: AudioMediumRecording {
        let recorder: PulseAudioRecorder
        let queue: DispatchQueue

        func read() async throws -> [Float] {
            try Task.checkCancellation()
            let recorder = self.recorder
            // Through a lock TSan sees: the samples are built on the queue (withHandoffContinuation).
            return try await withHandoffContinuation { continuation in
                queue.async {
                    continuation.resume(with: Result { try recorder.record(count: PulseAudioMediumIO.readChunk) })
                }
            }
        }

        func close() {}  // The stream closes when the recorder is released.
    }
}
