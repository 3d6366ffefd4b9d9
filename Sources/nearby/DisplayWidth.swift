/// How many terminal columns text takes, and how to cut it to a width.
///
/// A small `wcwidth`: East Asian wide and fullwidth characters and emoji take two columns, combining marks,
/// format characters and zero-width joiners none, everything else one. Control characters must be escaped before
/// (``PeerText``): they are counted as one column here.
enum DisplayWidth {
    /// The columns `text` takes.
    static func of(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + columns($1) }
    }

    /// The columns one scalar takes: 0, 1 or 2.
    static func columns(_ scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value < 0x300 { return 1 }  // ASCII and Latin: the common case, quickly
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if value == 0x200B || (0x1160...0x11FF).contains(value) { return 0 }  // zero width space, Hangul jamo medials
        return isWide(value) ? 2 : 1
    }

    private static func isWide(_ value: UInt32) -> Bool {
        switch value {
        case 0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0, 0x23F3, 0x25FD...0x25FE,
            0x2614...0x2615, 0x2648...0x2653, 0x267F, 0x2693, 0x26A1, 0x26AA...0x26AB, 0x26BD...0x26BE,
            0x26C4...0x26C5, 0x26CE, 0x26D4, 0x26EA, 0x26F2...0x26F3, 0x26F5, 0x26FA, 0x26FD, 0x2705,
            0x270A...0x270B, 0x2728, 0x274C, 0x274E, 0x2753...0x2755, 0x2757, 0x2795...0x2797, 0x27B0, 0x27BF,
            0x2B1B...0x2B1C, 0x2B50, 0x2B55, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
            0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE10...0xFE19, 0xFE30...0xFE6F,
            0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4, 0x17000...0x18CFF, 0x1B000...0x1B2FF,
            0x1F004, 0x1F0CF, 0x1F18E, 0x1F191...0x1F19A, 0x1F200...0x1F251, 0x1F300...0x1F64F,
            0x1F680...0x1F6FF, 0x1F7E0...0x1F7EB, 0x1F90C...0x1F9FF, 0x1FA70...0x1FAFF, 0x20000...0x3FFFD:
            true
        default:
            false
        }
    }

    /// `text` cut to at most `width` columns, keeping its start (`…` marks the cut).
    static func truncatingTail(_ text: String, to width: Int) -> String {
        guard of(text) > width else { return text }
        guard width > 0 else { return "" }
        return prefix(text, columns: width - 1) + "…"
    }

    /// `text` cut to at most `width` columns by taking out its middle (`…` marks the cut), so that both the start
    /// and the extension of a file name stay visible.
    static func truncatingMiddle(_ text: String, to width: Int) -> String {
        guard of(text) > width else { return text }
        guard width > 2 else { return truncatingTail(text, to: width) }
        let tail = (width - 1) / 2
        let head = width - 1 - tail
        return prefix(text, columns: head) + "…" + suffix(text, columns: tail)
    }

    /// The longest start of `text` that fits in `columns`.
    static func prefix(_ text: String, columns: Int) -> String {
        var result = String.UnicodeScalarView()
        var used = 0
        for scalar in text.unicodeScalars {
            let width = Self.columns(scalar)
            if used + width > columns { break }
            result.append(scalar)
            used += width
        }
        return String(result)
    }

    /// The longest end of `text` that fits in `columns`.
    static func suffix(_ text: String, columns: Int) -> String {
        var kept: [Unicode.Scalar] = []
        var used = 0
        for scalar in text.unicodeScalars.reversed() {
            let width = Self.columns(scalar)
            if used + width > columns { break }
            kept.append(scalar)
            used += width
        }
        // A combining mark must not start the result.
        while let first = kept.last, Self.columns(first) == 0 { kept.removeLast() }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: kept.reversed())
        return String(result)
    }

    /// `text` padded with spaces on the right to `width` columns.
    static func padded(_ text: String, to width: Int) -> String {
        let missing = width - of(text)
        return missing > 0 ? text + String(repeating: " ", count: missing) : text
    }
}
