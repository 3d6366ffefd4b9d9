import NearbyWire

/// Token ⇄ symbol mapping of a frame (docs/AUDIO-MODEM.md, "Frame"): token ‖ CRC-16 as nibbles, split over two
/// Reed–Solomon codewords, interleaved slot by slot, whitened onto tones after the Costas preamble.
enum AudioFrameCoding {
    /// The data symbols (0..<16) of the frame carrying `token`, in slot order, before whitening.
    static func dataSymbols(for token: [UInt8], layout: AudioFrameLayout) throws -> [UInt8] {
        guard token.count == layout.tokenLength else {
            throw NearbyError(
                .invalidArgument, "audio token has \(token.count) bytes; this modem carries \(layout.tokenLength)")
        }
        let crc = AudioCRC16.checksum(token)
        let payload = token + [UInt8(crc >> 8), UInt8(crc & 0xFF)]
        let nibbles = payload.flatMap { [$0 >> 4, $0 & 0x0F] }
        let first = GF16ReedSolomon.encode(stride(from: 0, to: nibbles.count, by: 2).map { nibbles[$0] })
        let second = GF16ReedSolomon.encode(stride(from: 1, to: nibbles.count, by: 2).map { nibbles[$0] })
        return zip(first, second).flatMap { [$0, $1] }
    }

    /// The tone index (0..<16) of every slot of the frame carrying `token`: preamble, then whitened data symbols.
    static func tones(for token: [UInt8], layout: AudioFrameLayout) throws -> [Int] {
        let symbols = try dataSymbols(for: token, layout: layout)
        return AudioFrameLayout.preambleTones
            + symbols.enumerated().map { slot, symbol in (Int(symbol) + AudioFrameLayout.whitening(slot: slot)) & 15 }
    }

    /// The token carried by the data symbols `symbols` after error correction, or nil when a codeword cannot be
    /// corrected or the CRC does not match. `corrections` counts the symbols the codes changed.
    static func token(fromCodewords first: [UInt8], _ second: [UInt8], layout: AudioFrameLayout) -> [UInt8]? {
        let dataCount = layout.dataSymbolsPerCodeword
        var nibbles: [UInt8] = []
        nibbles.reserveCapacity(2 * dataCount)
        for i in 0..<dataCount {
            nibbles.append(first[i])
            nibbles.append(second[i])
        }
        let payload = stride(from: 0, to: nibbles.count, by: 2).map { (nibbles[$0] << 4) | nibbles[$0 + 1] }
        let token = Array(payload.prefix(layout.tokenLength))
        let crc = UInt16(payload[layout.tokenLength]) << 8 | UInt16(payload[layout.tokenLength + 1])
        return AudioCRC16.checksum(token) == crc ? token : nil
    }
}
