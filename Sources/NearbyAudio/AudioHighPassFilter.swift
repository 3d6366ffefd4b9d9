#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fourth-order Butterworth high-pass filter at 16 kHz (two biquad sections), applied by the decoder before its
/// analysis so that loud audible sound (speech, music, hum) cannot leak into the 18.5–20 kHz tone bins.
struct AudioHighPassFilter: Sendable {
    /// One direct-form-I biquad section and its state.
    struct Section: Sendable {
        var b0: Float, b1: Float, b2: Float, a1: Float, a2: Float
        var x1: Float = 0, x2: Float = 0, y1: Float = 0, y2: Float = 0

        init(cutoff: Double, q: Double, sampleRate: Int) {
            let w0 = 2 * Double.pi * cutoff / Double(sampleRate)
            let alpha = sin(w0) / (2 * q)
            let a0 = 1 + alpha
            b0 = Float((1 + cos(w0)) / 2 / a0)
            b1 = Float(-(1 + cos(w0)) / a0)
            b2 = b0
            a1 = Float(-2 * cos(w0) / a0)
            a2 = Float((1 - alpha) / a0)
        }

        mutating func process(_ x: Float) -> Float {
            let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
            x2 = x1
            x1 = x
            y2 = y1
            y1 = y
            return y
        }
    }

    /// The cutoff frequency in hertz.
    static let cutoff = 16_000.0

    var first: Section
    var second: Section

    init(sampleRate: Int) {
        first = Section(cutoff: Self.cutoff, q: 0.541_196_1, sampleRate: sampleRate)
        second = Section(cutoff: Self.cutoff, q: 1.306_563, sampleRate: sampleRate)
    }

    mutating func process(_ x: Float) -> Float { second.process(first.process(x)) }
}
