import CPulseSimple
import Foundation
import NearbyAudio
import NearbyWire

/// One blocking PulseAudio stream (`pa_simple`) of mono 32-bit float samples, closed when released.
///
/// The calls block (a write until the server's buffer has room, a read until enough samples were recorded), so they
/// belong on a thread of their own, not on Swift concurrency's shared pool. A lock serialises them.
final class PulseAudioStream: @unchecked Sendable {
    private let handle: OpaquePointer
    private let lock = NSLock()
    let sampleRate: Int

    /// Connects to `server` (nil: `PULSE_SERVER`, then the client configuration, then the default server) and opens
    /// a stream to or from `device` (nil: the default sink or source).
    init(
        direction: pa_stream_direction_t, server: String?, device: String?, sampleRate: Int, applicationName: String,
        streamName: String, fragmentSamples: Int?
    ) throws {
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(sampleRate), channels: 1)
        let unset = UInt32.max
        let fragmentBytes = fragmentSamples.map { UInt32($0 * MemoryLayout<Float>.size) } ?? unset
        var attributes = pa_buffer_attr(
            maxlength: unset, tlength: direction == PA_STREAM_PLAYBACK ? fragmentBytes : unset, prebuf: unset,
            minreq: unset, fragsize: direction == PA_STREAM_RECORD ? fragmentBytes : unset)
        var code: Int32 = 0
        let opened = withOptionalCString(server) { server in
            withOptionalCString(device) { device in
                pa_simple_new(
                    server, applicationName, direction, device, streamName, &spec, nil, &attributes, &code)
            }
        }
        guard let opened else {
            let what = direction == PA_STREAM_PLAYBACK ? "cannot play to" : "cannot record from"
            throw PulseAudioFailure(code: code).error("\(what) \(device ?? "the default device")")
        }
        handle = opened
        self.sampleRate = sampleRate
    }

    deinit { pa_simple_free(handle) }

    /// Writes `samples`, blocking while the server's buffer is full.
    func write(_ samples: [Float]) throws {
        try locked { handle in
            var code: Int32 = 0
            let status = samples.withUnsafeBytes { pa_simple_write(handle, $0.baseAddress, $0.count, &code) }
            if status < 0 { throw PulseAudioFailure(code: code).error("audio playback failed") }
        }
    }

    /// Blocks until everything written has been played.
    func drain() throws {
        try locked { handle in
            var code: Int32 = 0
            if pa_simple_drain(handle, &code) < 0 { throw PulseAudioFailure(code: code).error("audio drain failed") }
        }
    }

    /// Reads exactly `count` samples, blocking until they were recorded.
    func read(count: Int) throws -> [Float] {
        try locked { handle in
            var code: Int32 = 0
            var samples = [Float](repeating: 0, count: count)
            let status = samples.withUnsafeMutableBytes { pa_simple_read(handle, $0.baseAddress, $0.count, &code) }
            if status < 0 { throw PulseAudioFailure(code: code).error("audio recording failed") }
            return samples
        }
    }

    private func locked<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(handle)
    }
}

/// Calls `body` with a C string for `string`, or with nil.
private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
