/// Turns the file name and parent folder a peer sent into safe relative path components.
///
/// Everything works on Unicode scalars and UTF-8 bytes, never on `Character`s: a grapheme such as `"/\u{301}"` is
/// not `"/"` to Swift but is a separator to the file system. Separators (`/`, `\`), their look-alikes (fullwidth
/// solidus and reverse solidus, division and fraction slash, …), `:`, NUL, control and bidirectional-override
/// characters become `_`. A component is at most 255 UTF-8 bytes, cut at a scalar boundary. Folder components that
/// are empty or only dots are dropped, at most ``maxFolderDepth`` remain and the whole relative path stays within
/// ``maxRelativePathBytes``; a file name that would be empty or only dots becomes `file`. A name that starts like
/// our own temporary files (`.nearby-`) gets a leading `_`. The result can never leave the receive directory.
package enum ReceivedFileNames {
    /// The most bytes of one path component (Linux `NAME_MAX`).
    package static let maxComponentBytes = 255
    /// The most folder levels a received file may be put under.
    package static let maxFolderDepth = 32
    /// The most UTF-8 bytes of a received file's path relative to the receive directory (folders and name).
    package static let maxRelativePathBytes = 1024

    /// A safe single path component for a received file name.
    package static func sanitizeFileName(_ name: String) -> String {
        sanitizeComponent(name) ?? "file"
    }

    /// Safe folder components for a received parent folder (possibly none).
    package static func sanitizeParentFolder(_ folder: String) -> [String] {
        var components: [String] = []
        var current = String.UnicodeScalarView()
        func flush() {
            if let component = sanitizeComponent(String(current)) { components.append(component) }
            current = String.UnicodeScalarView()
        }
        for scalar in folder.unicodeScalars {
            if scalar == "/" || scalar == "\\" { flush() } else { current.append(scalar) }
        }
        flush()
        components = Array(components.prefix(maxFolderDepth))
        // Leave room for a file name of the longest allowed length and a " (NNN)" suffix.
        let budget = maxRelativePathBytes - maxComponentBytes - 1
        while !components.isEmpty, components.reduce(0, { $0 + $1.utf8.count + 1 }) > budget {
            components.removeLast()
        }
        return components
    }

    /// The name shown to apps: parent folder joined with the file name.
    package static func displayName(fileName: String, parentFolder: String) -> String {
        let folder = sanitizeParentFolder(parentFolder)
        return (folder + [sanitizeFileName(fileName)]).joined(separator: "/")
    }

    /// `text` cut to at most `maxBytes` UTF-8 bytes at a Unicode-scalar boundary.
    package static func truncate(_ text: String, toUTF8Bytes maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in text.unicodeScalars {
            let size = String(scalar).utf8.count
            if bytes + size > maxBytes { break }
            kept.append(scalar)
            bytes += size
        }
        return String(kept)
    }

    /// One sanitized component, or `nil` when nothing safe remains (empty or only dots).
    static func sanitizeComponent(_ raw: String) -> String? {
        var scalars = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            scalars.append(isUnsafe(scalar) ? "_" : scalar)
        }
        var cleaned = truncate(String(scalars), toUTF8Bytes: maxComponentBytes)
        if cleaned.unicodeScalars.allSatisfy({ $0 == "." }) { return nil }
        if cleaned.utf8.starts(with: ".nearby-".utf8) {
            cleaned = "_" + String(cleaned.unicodeScalars.dropFirst())
        }
        return cleaned
    }

    private static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true  // NUL, C0 and C1 controls, DEL
        case 0x2F, 0x5C, 0x3A: true  // / \ :
        case 0x2044, 0x2215, 0x2216, 0x29F5, 0x29F8, 0x29F9, 0xFE68, 0xFF0F, 0xFF3C: true  // slash look-alikes
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F: true  // bidirectional overrides and marks
        case 0xFEFF, 0xFFF9...0xFFFB: true  // BOM / zero-width no-break space, interlinear annotations
        default: false
        }
    }
}
