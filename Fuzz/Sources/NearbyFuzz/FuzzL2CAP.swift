import NearbyBLE

/// L2CAP LE credit-based channels: signalling commands, and K-frame SDU reassembly with a fuzzer-chosen MTU/MPS
/// fed fuzzer-chosen K-frames; an SDU segmented by ``KFrameSegmenter`` must reassemble unchanged.
func fuzzL2CAP(_ input: FuzzInput) {
    var input = input
    switch input.byte() % 3 {
    case 0:
        decodeSignal(input.rest())
    case 1:
        let mtu = Int(input.uint16())
        let mps = Int(input.uint16())
        var reassembler = KFrameReassembler(mtu: mtu, mps: mps)
        while !input.isAtEnd {
            do {
                if let (sdu, frames) = try reassembler.append(input.chunk16()) {
                    fuzzCheck(sdu.count <= mtu && frames >= 1, "SDU over the MTU")
                }
            } catch {
                return  // the channel is closed on a malformed K-frame
            }
        }
    default:
        let mps = Int(input.byte()) + Int(L2CAPConstants.minimumMTU)
        let sdu = Array(input.rest().prefix(65_535))  // an SDU length is 16 bits
        var reassembler = KFrameReassembler(mtu: max(sdu.count, Int(L2CAPConstants.minimumMTU)), mps: mps)
        let segments = KFrameSegmenter.segments(sdu: sdu, mps: mps)
        var result: [UInt8]?
        for (index, segment) in segments.enumerated() {
            fuzzCheck(segment.count <= mps, "K-frame over the MPS")
            let output = try? reassembler.append(segment)
            fuzzCheck((output != nil) == (index == segments.count - 1), "SDU completed at the wrong K-frame")
            if let output { result = output.sdu }
        }
        fuzzCheck(result == sdu, "SDU did not survive segmentation and reassembly")
    }
}
