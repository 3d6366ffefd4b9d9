/// The streaming receiver of the audio modem (docs/AUDIO-MODEM.md, "Receiver").
///
/// A value-type state machine: feed it mono Float PCM in chunks of any size with ``consume(_:)`` and it returns the
/// tokens whose frames ended inside that chunk. It high-pass filters the input, measures the 16 tone energies of a
/// 20 ms window every hop (3⅓ ms), looks for the Costas preamble at every hop, and decodes the frame at the best
/// matching hop. It needs no knowledge of the level, tolerates sample-clock differences far beyond ±100 ppm, and
/// emits every frame it hears (a looping broadcaster is heard once per frame).
public struct AudioTokenDecoder: Sendable {
    /// The modem parameters (must match the encoder's).
    public let configuration: AudioModemConfiguration
    /// The preamble score (see ``DecodedAudioToken/syncScore``) above which a frame is decoded.
    public let detectionThreshold: Float

    private let bank: AudioToneBank
    private let layout: AudioFrameLayout
    private let hop: Int
    private let historyRows: Int
    private var filter: AudioHighPassFilter
    /// How many samples ``consume(_:)`` has taken so far (the clock of ``DecodedAudioToken/startSample``).
    public private(set) var samplesConsumed = 0
    /// Position of the next sample within the tone bank's period.
    private var phase = 0
    /// Samples accumulated into the current block.
    private var blockFill = 0
    /// The current block's partial correlations: 16 real parts, then 16 imaginary parts.
    private var block: [Float]
    /// The last six blocks' partial correlations, as a ring of 32-value rows.
    private var recentBlocks: [Float]
    private var blockCount = 0
    /// Tone energies of the most recent windows, a ring of 16-value rows indexed by window number.
    private var history: [Float]
    /// The run of candidate starts above the threshold being collected, if any.
    private var region: Region?
    /// Candidate starts (window numbers) before this one belong to a frame already emitted.
    private var suppressedBefore = 0

    private static let tones = AudioModemConfiguration.toneCount
    private static let windowBlocks = 6
    /// The longest run of candidate starts collected before decoding (a clean preamble matches over 7 hops).
    private static let maximumRegion = 8

    /// A run of consecutive candidate starts whose preamble score reached the threshold.
    private struct Region: Sendable {
        var opened: Int
        var best: Int
        var bestEnergy: Float
        var bestScore: Float
    }

    /// Creates a decoder.
    ///
    /// - Parameters:
    ///   - configuration: the sample rate and token length, the same as the encoder's.
    ///   - detectionThreshold: the minimum preamble score; 0.25 (noise scores about 0.06) by default.
    public init(configuration: AudioModemConfiguration = .standard, detectionThreshold: Float = 0.25) {
        self.configuration = configuration
        self.detectionThreshold = detectionThreshold
        bank = AudioToneBank(configuration: configuration)
        layout = configuration.layout
        hop = configuration.hopLength
        historyRows = layout.slotCount * AudioFrameLayout.hopsPerSlot + 4
        filter = AudioHighPassFilter(sampleRate: configuration.sampleRate)
        block = [Float](repeating: 0, count: 2 * Self.tones)
        recentBlocks = [Float](repeating: 0, count: Self.windowBlocks * 2 * Self.tones)
        history = [Float](repeating: 0, count: historyRows * Self.tones)
    }

    /// Consumes the next chunk of mono PCM and returns the tokens completed within it, oldest first.
    public mutating func consume(_ samples: some Sequence<Float>) -> [DecodedAudioToken] {
        var found: [DecodedAudioToken] = []
        var filtered: [Float] = []
        filtered.reserveCapacity(hop)
        for sample in samples {
            filtered.append(filter.process(sample))
            if filtered.count == hop - blockFill {
                accumulate(filtered)
                filtered.removeAll(keepingCapacity: true)
                blockFill = 0
                if let token = finishBlock() { found.append(token) }
            }
        }
        if !filtered.isEmpty {
            accumulate(filtered)
            blockFill += filtered.count
        }
        return found
    }

    /// Adds the correlations of `samples` (which do not cross a block boundary) to the current block.
    private mutating func accumulate(_ samples: [Float]) {
        let period = bank.period
        let start = phase
        samples.withUnsafeBufferPointer { input in
            bank.cosines.withUnsafeBufferPointer { cosines in
                bank.sines.withUnsafeBufferPointer { sines in
                    block.withUnsafeMutableBufferPointer { acc in
                        for tone in 0..<Self.tones {
                            var re: Float = 0
                            var im: Float = 0
                            var index = start
                            let base = tone * period
                            for x in input {
                                re += x * cosines[base + index]
                                im += x * sines[base + index]
                                index += 1
                                if index == period { index = 0 }
                            }
                            acc[tone] += re
                            acc[Self.tones + tone] += im
                        }
                    }
                }
            }
        }
        samplesConsumed += samples.count
        phase = (phase + samples.count) % period
    }

    /// Stores the finished block, computes the newest window's energies and checks the candidate it completes.
    private mutating func finishBlock() -> DecodedAudioToken? {
        let width = 2 * Self.tones
        let slot = blockCount % Self.windowBlocks
        for i in 0..<width {
            recentBlocks[slot * width + i] = block[i]
            block[i] = 0
        }
        blockCount += 1
        guard blockCount >= Self.windowBlocks else { return nil }
        let window = blockCount - Self.windowBlocks
        let row = (window % historyRows) * Self.tones
        for tone in 0..<Self.tones {
            var re: Float = 0
            var im: Float = 0
            for b in 0..<Self.windowBlocks {
                re += recentBlocks[b * width + tone]
                im += recentBlocks[b * width + Self.tones + tone]
            }
            history[row + tone] = re * re + im * im
        }
        return checkCandidate(completedBy: window)
    }

    /// Scores the candidate start whose last window is `window`. Consecutive starts whose preamble score reaches
    /// the threshold form a region (at most ``maximumRegion`` hops); when it closes, the frame is decoded at the start
    /// with the most energy in the preamble's tones (the windows then sit on the flat parts of the tones), or failing
    /// that at its neighbours.
    private mutating func checkCandidate(completedBy window: Int) -> DecodedAudioToken? {
        let framesSpan = (layout.slotCount - 1) * AudioFrameLayout.hopsPerSlot
        let newest = window - framesSpan
        guard newest >= suppressedBefore else {
            region = nil
            return nil
        }
        let (score, energy) = preambleMatch(start: newest)
        if score >= detectionThreshold {
            if var open = region {
                if energy > open.bestEnergy {
                    (open.best, open.bestEnergy) = (newest, energy)
                }
                open.bestScore = max(open.bestScore, score)
                region = open
            } else {
                region = Region(opened: newest, best: newest, bestEnergy: energy, bestScore: score)
            }
            if newest - region!.opened < Self.maximumRegion { return nil }
        }
        guard let closed = region else { return nil }
        region = nil
        for offset in [0, -1, 1, -2, 2] {
            let start = closed.best + offset
            guard start >= suppressedBefore, start >= 0, start <= newest else { continue }
            if let decoded = decodeFrame(start: start) {
                suppressedBefore = start + framesSpan / 2
                return DecodedAudioToken(
                    token: decoded.token, startSample: (start - 1) * hop, syncScore: closed.bestScore,
                    correctedSymbols: decoded.corrections)
            }
        }
        return nil
    }

    /// The energies row of window `window` (which must still be in the history).
    private func withRow<R>(_ window: Int, _ body: (UnsafeBufferPointer<Float>) -> R) -> R {
        history.withUnsafeBufferPointer { all in
            let row = (window % historyRows) * Self.tones
            return body(UnsafeBufferPointer(rebasing: all[row..<(row + Self.tones)]))
        }
    }

    /// The preamble match at `start`: the mean share of each preamble window's energy that lies in its expected
    /// tone (level-independent, for detection), and the sum of those tones' energies (for timing).
    private func preambleMatch(start: Int) -> (score: Float, energy: Float) {
        var share: Float = 0
        var energy: Float = 0
        for (i, tone) in AudioFrameLayout.preambleTones.enumerated() {
            withRow(start + i * AudioFrameLayout.hopsPerSlot) { energies in
                let total = energies.reduce(0, +)
                share += total > 0 ? energies[tone] / total : 0
                energy += energies[tone]
            }
        }
        return (share / Float(AudioFrameLayout.preambleTones.count), energy)
    }

    /// The token of the frame whose first analysis window is `start`, or nil.
    /// A first pass decides each slot by its loudest tone; if that fails, a second pass decides by likelihood
    /// under a channel estimated from the preamble and the first pass (``AudioChannelEstimate``).
    private func decodeFrame(start: Int) -> (token: [UInt8], corrections: Int)? {
        let rows = (0..<layout.slotCount).map { slot in
            withRow(start + slot * AudioFrameLayout.hopsPerSlot) { Array($0) }
        }
        return Self.decode(preamble: Array(rows.prefix(layout.preambleSlotCount)),
            data: Array(rows.dropFirst(layout.preambleSlotCount)), layout: layout)
    }

    /// Both decoding passes over the tone energies of a frame's preamble and data windows.
    static func decode(
        preamble: [[Float]], data: [[Float]], layout: AudioFrameLayout
    ) -> (token: [UInt8], corrections: Int)? {
        let firstPass = data.enumerated().map { slot, energies in
            energies.withUnsafeBufferPointer { AudioSymbolDecision(energies: $0, slot: slot) }
        }
        if let decoded = AudioFrameDecision.token(from: firstPass, layout: layout) { return decoded }
        var decisions = firstPass
        for _ in 0..<2 {
            let channel = AudioChannelEstimate(preamble: preamble, data: data, firstPass: decisions)
            decisions = data.enumerated().map { slot, energies in channel.decision(energies: energies, slot: slot) }
            if let decoded = AudioFrameDecision.token(from: decisions, layout: layout) { return decoded }
        }
        return nil
    }
}

extension AudioTokenDecoder {
    /// The 16 tone energies of every slot's analysis window of a frame known to start at `frameStart` in `samples`
    /// (no filtering, no search), preamble slots first.
    static func slotEnergies(
        of samples: [Float], frameStart: Int, configuration: AudioModemConfiguration
    ) -> [[Float]] {
        let bank = AudioToneBank(configuration: configuration)
        return (0..<configuration.layout.slotCount).map { slot in
            bank.energies(
                of: samples, start: frameStart + slot * configuration.slotLength + configuration.hopLength,
                length: configuration.windowLength)
        }
    }

    /// The loudest-tone decisions of the data slots of a frame known to start at `frameStart` in `samples`: the
    /// modem's raw symbol channel, used to measure its error rate before correction.
    static func decisions(
        of samples: [Float], frameStart: Int, configuration: AudioModemConfiguration
    ) -> [AudioSymbolDecision] {
        let preambleSlots = configuration.layout.preambleSlotCount
        return slotEnergies(of: samples, frameStart: frameStart, configuration: configuration)
            .dropFirst(preambleSlots).enumerated().map { slot, energies in
                energies.withUnsafeBufferPointer { AudioSymbolDecision(energies: $0, slot: slot) }
            }
    }
}
