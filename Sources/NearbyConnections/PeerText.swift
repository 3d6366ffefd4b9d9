/// Makes text a peer chose (endpoint names and infos, endpoint IDs, messages) safe to print.
///
/// A peer picks its name, so printing it raw lets a stranger send terminal escape sequences (clear the screen,
/// retitle the window, fake earlier lines), break a one-event-per-line log with a newline, or reorder what is shown
/// with bidirectional overrides. These functions escape every such scalar (see ``isUnsafe(_:)``) and leave the rest,
/// including non-ASCII letters, as they are.
package enum PeerText {
    /// Whether printing `scalar` raw could change how a terminal or a log shows other text: C0 controls (newline
    /// and tab included), DEL, C1 controls, the bidirectional marks, embeddings, overrides and isolates
    /// (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), and the line and paragraph separators
    /// (U+2028, U+2029).
    package static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        case 0x2028, 0x2029: true
        default: false
        }
    }

    /// `text` for a terminal: `\n`, `\r` and `\t` become those two characters, every other unsafe scalar becomes
    /// `\u{…}` with its hexadecimal value (ESC becomes `\u{1B}`). The result is one line without control
    /// characters.
    package static func escapedForTerminal(_ text: String) -> String {
        replacingUnsafeScalars(in: text) { scalar in
            switch scalar {
            case "\n": "\\n"
            case "\r": "\\r"
            case "\t": "\\t"
            default: "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
    }

    /// A compact JSON text (no whitespace between tokens, as `JSONSerialization` writes it without
    /// `.prettyPrinted`) with every unsafe scalar written as a `\uXXXX` escape. In such a text these scalars can
    /// only stand inside strings, where the escape means the same scalar, so the result is valid JSON with the same
    /// value.
    package static func escapingUnsafeScalars(inCompactJSON json: String) -> String {
        replacingUnsafeScalars(in: json) { scalar in
            let hex = String(scalar.value, radix: 16, uppercase: false)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
    }

    /// `text` with every unsafe scalar replaced by `escape(scalar)`.
    private static func replacingUnsafeScalars(in text: String, _ escape: (Unicode.Scalar) -> String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if isUnsafe(scalar) {
                result.append(contentsOf: escape(scalar).unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }
}
