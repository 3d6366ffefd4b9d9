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
        let root = Glibc.open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { return 0 }
        var budget = maxEntriesVisited
        return sweep(root, depth: 0, budget: &budget, shouldStop: shouldStop)
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

    private static let direntNameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    private static let direntTypeOffset = MemoryLayout<dirent>.offset(of: \dirent.d_type)!

    /// Sweeps the folder of `descriptor` (which it closes) and its subfolders.
    private static func sweep(_ descriptor: Int32, depth: Int, budget: inout Int, shouldStop: () -> Bool) -> Int {
        guard let stream = fdopendir(descriptor) else {
            Glibc.close(descriptor)
            return 0
        }
        defer { closedir(stream) }
        var removed = 0
        var subfolders: [String] = []
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
            } else if type == UInt8(DT_REG), isStale(name), unlinkat(descriptor, name, 0) == 0 {
                removed += 1
            }
        }
        for name in subfolders where budget > 0 && !shouldStop() {
            let child = openat(descriptor, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            if child >= 0 { removed += sweep(child, depth: depth + 1, budget: &budget, shouldStop: shouldStop) }
        }
        return removed
    }
}
