/// Turns the file name and parent folder a peer sent into safe relative path components.
///
/// Separators (`/`, `\`), `:` and NUL become `_`; `.`, `..` and empty components are dropped from folders, and a
/// file name that would be empty, `.` or `..` becomes `file`. The result can never leave the receive directory.
public enum ReceivedFileNames {
    /// A safe single path component for a received file name.
    public static func sanitizeFileName(_ name: String) -> String {
        let cleaned = String(name.map { "/\\:\u{0}".contains($0) ? "_" : $0 })
        if cleaned.isEmpty || cleaned == "." || cleaned == ".." {
            return "file"
        }
        return String(cleaned.prefix(255))
    }

    /// Safe folder components for a received parent folder (possibly none).
    public static func sanitizeParentFolder(_ folder: String) -> [String] {
        folder.split(whereSeparator: { $0 == "/" || $0 == "\\" })
            .map { String($0.map { ":\u{0}".contains($0) ? "_" : $0 }) }
            .filter { !$0.isEmpty && $0 != "." && $0 != ".." }
            .map { String($0.prefix(255)) }
    }

    /// The name shown to apps: parent folder joined with the file name.
    public static func displayName(fileName: String, parentFolder: String) -> String {
        let folder = sanitizeParentFolder(parentFolder)
        return (folder + [sanitizeFileName(fileName)]).joined(separator: "/")
    }
}
