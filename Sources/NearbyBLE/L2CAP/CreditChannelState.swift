import NearbyWire

/// SDU segmentation into K-frames for an LE credit-based channel.
package enum KFrameSegmenter {
    /// Splits `sdu` into K-frame information payloads of at most `mps` bytes; the first starts with the 2-byte SDU
    /// length (which counts against the MPS).
    package static func segments(sdu: [UInt8], mps: Int) -> [[UInt8]] {
        var first: [UInt8] = []
        first.appendLE16(UInt16(sdu.count))
        let firstData = min(sdu.count, max(0, mps - 2))
        first += sdu[0..<firstData]
        var segments = [first]
        var offset = firstData
        while offset < sdu.count {
            let end = min(sdu.count, offset + mps)
            segments.append(Array(sdu[offset..<end]))
            offset = end
        }
        return segments
    }
}

/// The inbound half of an LE credit-based channel: reassembles SDUs from K-frames and enforces our MTU, MPS and
/// credits. A value-type state machine.
package struct KFrameReassembler: Sendable {
    /// Our MTU (largest SDU we accept).
    package let mtu: Int
    /// Our MPS (largest K-frame payload we accept).
    package let mps: Int
    private var sdu: [UInt8] = []
    private var expected: Int?
    private(set) var framesInSDU = 0

    /// Creates a reassembler for our `mtu` and `mps`.
    package init(mtu: Int, mps: Int) {
        self.mtu = mtu
        self.mps = mps
    }

    /// Feeds one K-frame information payload; returns a complete SDU and the number of K-frames it took.
    /// - Throws: `.malformedL2CAPPacket` when the frame exceeds our MPS, the SDU length exceeds our MTU, or the
    ///   frames add up to more than the announced SDU length. The channel must then be disconnected.
    package mutating func append(_ payload: [UInt8]) throws -> (sdu: [UInt8], frames: Int)? {
        guard payload.count <= mps else {
            throw NearbyError(.malformedL2CAPPacket, "K-frame of \(payload.count) bytes exceeds our MPS \(mps)")
        }
        framesInSDU += 1
        if let expected {
            sdu += payload
            guard sdu.count <= expected else {
                throw NearbyError(.malformedL2CAPPacket, "K-frames exceed the SDU length \(expected)")
            }
        } else {
            guard payload.count >= 2 else {
                throw NearbyError(.malformedL2CAPPacket, "first K-frame shorter than its SDU length field")
            }
            let length = Int(payload[0]) | Int(payload[1]) << 8
            guard length <= mtu else {
                throw NearbyError(.malformedL2CAPPacket, "SDU length \(length) exceeds our MTU \(mtu)")
            }
            guard payload.count - 2 <= length else {
                throw NearbyError(.malformedL2CAPPacket, "first K-frame longer than the SDU length \(length)")
            }
            expected = length
            sdu = Array(payload[2...])
        }
        guard sdu.count == expected else { return nil }
        defer {
            sdu = []
            expected = nil
            framesInSDU = 0
        }
        return (sdu, framesInSDU)
    }
}

/// Parameters of one side of an LE credit-based channel.
package struct CreditChannelParameters: Sendable, Hashable {
    /// Largest SDU.
    package var mtu: UInt16
    /// Largest K-frame payload.
    package var mps: UInt16
    /// Initial credits.
    package var credits: UInt16

    /// Creates parameters.
    package init(mtu: UInt16, mps: UInt16, credits: UInt16) {
        self.mtu = mtu
        self.mps = mps
        self.credits = credits
    }

    /// Whether MTU and MPS are in the ranges the specification allows.
    package var isValid: Bool {
        mtu >= L2CAPConstants.minimumMTU && mps >= L2CAPConstants.minimumMTU && mps <= L2CAPConstants.maximumMPS
    }
}
