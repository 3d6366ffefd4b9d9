#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The temporary files `ReceivedFileStore` writes into (`.nearby-PID-N.partial`), and their removal when a
/// process that wrote them died before finishing.
package enum PartialFiles {
    /// How every temporary file name starts.
    static let prefix = ".nearby-"
    /// How every temporary file name ends.
    static let suffix = ".partial"
    /// The most directory entries one clean-up looks at, so a huge receive directory cannot stall start-up.
    static let maxEntriesVisited = 200_000

    /// Deletes stale temporary files under `directory` (at most ``ReceivedFileNames/maxFolderDepth`` levels deep):
    /// regular files named `.nearby-PID-N.partial` whose process is gone, and `.nearby-N.partial` of older versions.
    /// Symbolic links are never followed and never deleted; files of running processes (this one included) stay.
    ///
    /// A large receive directory (a home folder, a build tree) takes a while, over a network or 9p file system
    /// minutes: the engine runs this in the background (``NearbyEngine/waitForStaleFileCleanup()``), never on
    /// the way to advertising or discovery. `shouldStop` is asked before each entry.
    /// - Returns: how many files were deleted.
    @discardableResult
    package static func removeStale(in directory: URL, shouldStop: () -> Bool = { false }) -> Int {
        removeStale(in: directory, keepingResumableFor: .zero, shouldStop: shouldStop).removed
    }

    /// ``removeStale(in:shouldStop:)``, except that a stale temporary file with a resume record (``ResumeRecord``)
    /// that was written to less than `window` ago is kept, with its record, for a sender that may come back; records
    /// whose temporary file is gone, or that are not kept, are deleted too.
    /// - Returns: how many files were deleted, and those kept.
    package static func removeStale(
        in directory: URL, keepingResumableFor window: Duration, shouldStop: () -> Bool = { false }
    ) -> (removed: Int, kept: [ResumableFiles.Kept]) {
        let root = Glibc.open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { return (0, []) }
        var budget = maxEntriesVisited
        var kept: [ResumableFiles.Kept] = []
        let removed = sweep(
            root, path: [], depth: 0, budget: &budget, window: window, kept: &kept, shouldStop: shouldStop)
        return (removed, kept)
    }

    /// Whether `name` is a temporary file of a process that no longer runs (or of an older version).
    static func isStale(_ name: String) -> Bool {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return false }
        let middle = name.dropFirst(prefix.count).dropLast(suffix.count)
        let parts = middle.split(separator: "-", omittingEmptySubsequences: false)
        guard !parts.isEmpty, parts.count <= 2, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }) else {
            return false
        }
        guard parts.count == 2 else { return true }  // an older version's name, without a process ID
        guard let pid = Int32(parts[0]), pid > 0 else { return false }
        if pid == getpid() { return false }
        return kill(pid, 0) != 0 && errno == ESRCH
    }

    /// The resume record beside the temporary file `name`, when the file was written to less than `window` ago.
    private static func freshRecord(for name: String, in folder: Int32, window: Duration) -> ResumeRecord? {
        var info = stat()
        guard fstatat(folder, name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        let age = Date().timeIntervalSince1970 - Double(info.st_mtim.tv_sec)
        let (seconds, _) = window.components
        guard age < Double(seconds) + 1 else { return nil }
        let record = openat(folder, ResumeRecord.name(for: name), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard record >= 0 else { return nil }
        defer { Glibc.close(record) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = Glibc.read(record, &bytes, bytes.count)
        guard count > 0 else { return nil }
        return try? JSONDecoder().decode(ResumeRecord.self, from: Data(bytes.prefix(count)))
    }

    private static let direntNameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    private static let direntTypeOffset = MemoryLayout<dirent>.offset(of: \dirent.d_type)!

    /// Sweeps the folder of `descriptor` (at `path` under the receive directory; the descriptor is closed) and its
    /// subfolders.
    private static func sweep(
        _ descriptor: Int32, path: [String], depth: Int, budget: inout Int, window: Duration,
        kept: inout [ResumableFiles.Kept], shouldStop: () -> Bool
    ) -> Int {
        guard let stream = fdopendir(descriptor) else {
            Glibc.close(descriptor)
            return 0
        }
        defer { closedir(stream) }
        var removed = 0
        var subfolders: [String] = []
        var files: Set<String> = []
        while budget > 0, !shouldStop(), let entry = readdir(stream) {
            budget -= 1
            // Read the fields in place: a record from readdir is only `d_reclen` bytes long, so copying the whole
            // `dirent` (`entry.pointee`) can read past the end of the directory buffer and fault at a page edge.
            let record = UnsafeRawPointer(entry)
            let name = String(cString: (record + direntNameOffset).assumingMemoryBound(to: CChar.self))
            if name == "." || name == ".." { continue }
            var type = record.load(fromByteOffset: direntTypeOffset, as: UInt8.self)
            if type == UInt8(DT_UNKNOWN) {
                var info = stat()
                guard fstatat(descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { continue }
                switch info.st_mode & S_IFMT {
                case S_IFDIR: type = UInt8(DT_DIR)
                case S_IFREG: type = UInt8(DT_REG)
                default: continue
                }
            }
            if type == UInt8(DT_DIR) {
                if depth < ReceivedFileNames.maxFolderDepth { subfolders.append(name) }
            } else if type == UInt8(DT_REG) {
                files.insert(name)
            }
        }
        for name in files where isStale(name) {
            if window > .zero, let record = freshRecord(for: name, in: descriptor, window: window) {
                kept.append(ResumableFiles.Kept(folder: path, temporaryName: name, record: record))
                continue
            }
            if unlinkat(descriptor, name, 0) == 0 { removed += 1 }
            if files.contains(ResumeRecord.name(for: name)) { unlinkat(descriptor, ResumeRecord.name(for: name), 0) }
        }
        // A record without its temporary file (only once the whole folder was listed: the file may come later).
        let listedAll = budget > 0 && !shouldStop()
        for name in files where listedAll && name.hasPrefix(prefix) && name.hasSuffix(suffix + ResumeRecord.suffix) {
            let partial = String(name.dropLast(ResumeRecord.suffix.count))
            if !files.contains(partial), isStale(partial), unlinkat(descriptor, name, 0) == 0 { removed += 1 }
        }
        for name in subfolders where budget > 0 && !shouldStop() {
            let child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child >= 0 {
                removed += sweep(
                    child, path: path + [name], depth: depth + 1, budget: &budget, window: window, kept: &kept, shouldStop: shouldStop)
            }
        }
        return removed
    }
}
