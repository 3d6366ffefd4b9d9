import Foundation

/// One transfer's progress line, laid out to fit a terminal width:
///
///     photo.jpg  [##########--------------]  42%  84.0/200.0 MB  95.3 MB/s  ETA 0:01
///
/// The name is escaped (peers choose it) and shortened in the middle when space runs out; then the bar shrinks;
/// then the ETA, the byte counts, the bar and the speed are left out, in that order. A stream (size unknown) shows
/// its bytes and speed only. The line never takes more than `width - 1` columns, so the terminal never wraps it.
struct TransferLine: Sendable, Equatable {
    /// The file name (or `stream`, `message`), already safe to print.
    var name: String
    /// Bytes moved so far.
    var bytes: Int64
    /// The size, or −1 when unknown (streams).
    var total: Int64
    /// The current speed, once known.
    var bytesPerSecond: Double?

    /// The most columns the bar takes (a wide terminal gets a wide line, not a huge bar).
    static let maxBarWidth = 30
    /// The fewest columns a bar is drawn with.
    static let minBarWidth = 8
    /// The fewest columns kept for the name before fields are left out.
    static let minNameWidth = 12

    private enum Field: CaseIterable {
        case bar, percent, bytes, speed, eta
    }

    /// The line for a terminal `width` columns wide.
    func render(width: Int) -> String {
        let available = max(1, width - 1)
        let layouts: [[Field]] =
            total >= 0
            ? [
                [.bar, .percent, .bytes, .speed, .eta], [.bar, .percent, .bytes, .speed], [.bar, .percent, .speed],
                [.bar, .percent], [.percent, .speed], [.percent], [],
            ]
            : [[.bytes, .speed], [.bytes], []]
        let nameWidth = DisplayWidth.of(name)
        for layout in layouts {
            let texts = layout.compactMap { text(of: $0) }
            let fixed = texts.reduce(0) { $0 + 2 + DisplayWidth.of($1) }  // two spaces before each field
            let barMinimum = layout.contains(.bar) ? Self.minBarWidth + 2 : 0  // the bar and the two spaces before it
            guard min(nameWidth, Self.minNameWidth) + fixed + barMinimum <= available || layout.isEmpty else { continue }
            let shownName = DisplayWidth.truncatingMiddle(
                name, to: max(1, min(nameWidth, available - fixed - barMinimum)))
            var line = shownName
            if layout.contains(.bar) {
                let room = available - DisplayWidth.of(shownName) - fixed - 2
                let barWidth = min(Self.maxBarWidth, max(Self.minBarWidth, room))
                line += "  " + bar(width: barWidth)
            }
            for text in texts { line += "  " + text }
            return DisplayWidth.truncatingTail(line, to: available).replacingOccurrences(
                of: " +$", with: "", options: .regularExpression)
        }
        return ""
    }

    private var fraction: Double {
        guard total > 0 else { return total == 0 ? 1 : 0 }
        return min(1, max(0, Double(bytes) / Double(total)))
    }

    private func text(of field: Field) -> String? {
        switch field {
        case .bar:
            return nil  // drawn with the width left over
        case .percent:
            return DisplayWidth.padded(String(Int(fraction * 100)) + "%", to: 4)
        case .bytes:
            return total >= 0 ? Quantities.sizePair(bytes, of: total) : Quantities.size(bytes)
        case .speed:
            return bytesPerSecond.map(Quantities.rate) ?? "--.- MB/s"
        case .eta:
            guard let speed = bytesPerSecond, speed > 0, total >= 0 else { return "ETA --:--" }
            return "ETA " + Quantities.clock(Double(total - bytes) / speed)
        }
    }

    private func bar(width: Int) -> String {
        let inner = width - 2
        let filled = Int(fraction * Double(inner))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: inner - filled) + "]"
    }
}
