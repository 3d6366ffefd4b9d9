import NearbyWire

/// The 4-byte big-endian length framing of every Nearby socket: the stream is fed to ``IncrementalFrameReader`` in
/// fuzzer-chosen pieces; the frames must equal those of the one-shot ``LengthPrefixFraming/split(_:)`` loop and
/// re-frame to the same bytes.
func fuzzFraming(_ input: FuzzInput) {
    var input = input
    let pieceSizes = (0..<4).map { _ in Int(input.byte() % 64) + 1 }
    let stream = input.rest()

    var oneShot: [[UInt8]] = []
    var oneShotError = false
    var remaining = stream
    while true {
        do {
            guard let (body, consumed) = try LengthPrefixFraming.split(remaining) else { break }
            fuzzCheck(consumed == LengthPrefixFraming.prefixLength + body.count, "split consumed \(consumed)")
            oneShot.append(body)
            remaining.removeFirst(consumed)
        } catch {
            oneShotError = true
            break
        }
    }

    var reader = IncrementalFrameReader()
    var incremental: [[UInt8]] = []
    var incrementalError = false
    var offset = 0
    var piece = 0
    feeding: while offset < stream.count {
        let end = min(stream.count, offset + pieceSizes[piece % pieceSizes.count])
        reader.append(stream[offset..<end])
        offset = end
        piece += 1
        while true {
            do {
                guard let frame = try reader.nextFrame() else { break }
                incremental.append(frame)
            } catch {
                incrementalError = true
                break feeding
            }
        }
    }
    fuzzCheck(incremental == oneShot, "incremental and one-shot framing disagree")
    fuzzCheck(incrementalError == oneShotError, "only one framing path rejected the stream")
    for body in oneShot {
        let framed = try? LengthPrefixFraming.frame(body)
        fuzzCheck(framed.map { Array($0.dropFirst(LengthPrefixFraming.prefixLength)) } == body, "re-framing changed a body")
    }
}
