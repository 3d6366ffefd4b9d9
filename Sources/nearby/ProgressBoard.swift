/// The progress lines at the bottom of a terminal: one ``TransferLine`` per transfer under way, redrawn in place,
/// with ordinary output printed above them.
///
/// A value type that returns the text to write (ANSI cursor movements included): the caller writes it in order.
/// Time comes in as seconds of a monotonic clock, so tests drive it. Redraws are thinned out to one per
/// ``redrawInterval`` unless a line comes or goes.
struct ProgressBoard: Sendable {
    /// The least time between two redraws caused by progress alone.
    static let redrawInterval = 0.1
    /// The window the speed is measured over.
    static let speedWindow = 3.0

    private struct Entry: Sendable {
        var line: TransferLine
        var samples: [(time: Double, bytes: Int64)]
    }

    private var keys: [Int64] = []
    private var entries: [Int64: Entry] = [:]
    /// Lines drawn below the cursor's row at the last redraw (the cursor sits under them, at column 0).
    private var drawn = 0
    private var lastRedraw = -Double.infinity

    /// Whether any line is shown.
    var isEmpty: Bool { keys.isEmpty }

    /// Progress of transfer `key`: adds its line (named `name`) or updates it. Returns the text to write, if a
    /// redraw is due.
    mutating func update(
        _ key: Int64, name: String, bytes: Int64, total: Int64, now: Double, width: Int
    ) -> String? {
        let isNew = entries[key] == nil
        var entry = entries[key] ?? Entry(line: TransferLine(name: name, bytes: 0, total: total), samples: [])
        entry.line.bytes = bytes
        entry.line.total = total
        entry.samples.append((now, bytes))
        entry.samples.removeAll { now - $0.time > Self.speedWindow }
        if let first = entry.samples.first, now - first.time >= 0.25 {
            entry.line.bytesPerSecond = Double(bytes - first.bytes) / (now - first.time)
        }
        entries[key] = entry
        if isNew { keys.append(key) }
        guard isNew || now - lastRedraw >= Self.redrawInterval else { return nil }
        return redraw(now: now, width: width)
    }

    /// Transfer `key` ended: its line goes. Returns the text to write (nothing if it had no line).
    mutating func remove(_ key: Int64, now: Double, width: Int) -> String {
        guard entries.removeValue(forKey: key) != nil else { return "" }
        keys.removeAll { $0 == key }
        return redraw(now: now, width: width)
    }

    /// Text that prints `lines` (each ending in a newline) above the progress lines, which are drawn again below.
    mutating func printAbove(_ lines: String, now: Double, width: Int) -> String {
        guard drawn > 0 || !keys.isEmpty else { return lines }
        return takeDown() + lines + putBack(now: now, width: width)
    }

    /// Text that takes the progress lines off the screen for a moment (``putBack(now:width:)`` draws them again).
    mutating func takeDown() -> String { clear() }

    /// Text that draws the progress lines again after ``takeDown()``.
    mutating func putBack(now: Double, width: Int) -> String {
        keys.isEmpty ? "" : draw(now: now, width: width)
    }

    /// Text that takes every progress line off the screen (and forgets them).
    mutating func clearAll() -> String {
        keys.removeAll()
        entries.removeAll()
        return clear()
    }

    private mutating func redraw(now: Double, width: Int) -> String {
        clear() + draw(now: now, width: width)
    }

    /// Moves up over the lines drawn and erases them and everything below.
    private mutating func clear() -> String {
        defer { drawn = 0 }
        return drawn > 0 ? "\r\u{1B}[\(drawn)A\u{1B}[J" : ""
    }

    private mutating func draw(now: Double, width: Int) -> String {
        lastRedraw = now
        drawn = keys.count
        return keys.compactMap { entries[$0]?.line.render(width: width) }.map { $0 + "\n" }.joined()
    }
}
