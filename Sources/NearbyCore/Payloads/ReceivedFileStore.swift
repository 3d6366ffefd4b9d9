#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NearbyWire
import Synchronization

/// Writes incoming files under a receive directory: each into a hidden temporary file, moved to its final,
/// sanitized name only when complete and of the announced size. A failed or cancelled file is deleted, so a
/// partial file never appears under a final name. Names that already exist get a ` (1)`, ` (2)`, … suffix.
///
/// Nothing a peer names is reached by following a symbolic link: folders are made and opened one component at a
/// time relative to a descriptor of the receive directory (`mkdirat`, `openat` with `O_NOFOLLOW`), the temporary
/// file is created with `O_CREAT|O_EXCL|O_NOFOLLOW`, sized with `fstat` on its descriptor, and linked into place with
/// `linkat` only after the folder's resolved path is checked to be inside the receive directory. A symbolic link
/// planted where a folder, the final name or the temporary name would go fails that file and is left untouched.
final class ReceivedFileStore: Sendable {
    private struct OpenFile {
        var descriptor: Int32
        var folderDescriptor: Int32
        var temporaryName: String
        var folder: [String]
        var fileName: String
        var written: Int64
        /// Whether the size is unknown, so that free space is checked before every write.
        var unknownSize: Bool
        /// Hands what is written to the disk as it arrives (``WriteBehind``).
        var writeBehind = WriteBehind()
    }

    /// Where files go.
    let directory: URL
    /// The free space that must remain on the receive directory's file system.
    let minimumFreeSpace: Int64
    private let openFiles = LockedValue<[PayloadID: OpenFile]>([:])
    private let temporaryName: @Sendable () -> String
    private let availableSpace: @Sendable (Int32) -> Int64?
    private static let temporaryCounter = Atomic<UInt64>(0)

    /// A store writing under `directory`; `temporaryName` names temporary files (tests pick them; by default
    /// `.nearby-PID-N.partial` with a counter of this process); `availableSpace` measures free space (tests fake it).
    init(
        directory: URL, minimumFreeSpace: Int64 = 0,
        temporaryName: @escaping @Sendable () -> String = ReceivedFileStore.nextTemporaryName,
        availableSpace: @escaping @Sendable (Int32) -> Int64? = ReceivedFileStore.availableSpace
    ) {
        self.directory = directory
        self.minimumFreeSpace = minimumFreeSpace
        self.temporaryName = temporaryName
        self.availableSpace = availableSpace
    }

    /// The bytes an unprivileged user may still write on the file system of `descriptor` (`fstatvfs`).
    @Sendable static func availableSpace(_ descriptor: Int32) -> Int64? {
        var info = statvfs()
        guard fstatvfs(descriptor, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// The next `.nearby-PID-N.partial` name of this process.
    @Sendable static func nextTemporaryName() -> String {
        let counter = temporaryCounter.add(1, ordering: .relaxed).newValue
        return "\(PartialFiles.prefix)\(getpid())-\(counter)\(PartialFiles.suffix)"
    }

    /// Creates the temporary file of payload `id`; `totalSize` (−1 when unknown) is checked against the free space.
    func begin(_ id: PayloadID, fileName: String, parentFolder: String, totalSize: Int64 = -1) throws(NearbyError) {
        let folder = ReceivedFileNames.sanitizeParentFolder(parentFolder)
        let folderDescriptor = try openFolder(folder)
        let sanitizedName = ReceivedFileNames.sanitizeFileName(fileName)
        do {
            try checkFreeSpace(folderDescriptor, needed: max(totalSize, 0))
            _ = try uniqueName(in: folderDescriptor, fileName: sanitizedName)  // fails early on a planted symlink
        } catch {
            Glibc.close(folderDescriptor)
            throw error
        }
        let temporary = temporaryName()
        let descriptor = openat(
            folderDescriptor, temporary, O_CREAT | O_EXCL | O_NOFOLLOW | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = Self.reason(errno)
            Glibc.close(folderDescriptor)
            throw NearbyError(.endpointIoError, "cannot create the temporary file \(temporary): \(reason)")
        }
        openFiles.withLock { open in
            open[id] = OpenFile(
                descriptor: descriptor, folderDescriptor: folderDescriptor, temporaryName: temporary, folder: folder,
                fileName: sanitizedName, written: 0, unknownSize: totalSize < 0)
        }
    }

    /// Appends bytes to payload `id`'s temporary file. For a file of unknown size, first checks that the bytes leave
    /// the free-space floor.
    func write(_ id: PayloadID, _ data: Data) throws(NearbyError) {
        guard let file = openFiles.withLock({ $0[id] }) else {
            throw NearbyError(.endpointIoError, "no open file for payload \(id)")
        }
        if file.unknownSize {
            try checkFreeSpace(file.descriptor, needed: Int64(data.count))
        }
        var failure: Int32 = 0
        data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let result = Glibc.write(file.descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if result < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    return
                }
                offset += result
            }
        }
        guard failure == 0 else {
            throw NearbyError(.endpointIoError, "writing \(file.temporaryName): \(Self.reason(failure))")
        }
        var writeBehind = file.writeBehind
        writeBehind.wrote(upTo: file.written + Int64(data.count), descriptor: file.descriptor)
        openFiles.withLock { open in
            open[id]?.written += Int64(data.count)
            open[id]?.writeBehind = writeBehind
        }
    }

    /// Closes payload `id`'s file, checks its size, and moves it to its final name; returns that path.
    func finish(_ id: PayloadID, expectedSize: Int64) throws(NearbyError) -> URL {
        guard let file = openFiles.withLock({ $0.removeValue(forKey: id) }) else {
            throw NearbyError(.endpointIoError, "no open file for payload \(id)")
        }
        defer {
            unlinkat(file.folderDescriptor, file.temporaryName, 0)
            Glibc.close(file.folderDescriptor)
        }
        var info = stat()
        // Written as 0600 while partial; complete, it gets the mode a new file of this user gets (0644 with the
        // usual umask of 022), as `cp` would give it.
        _ = fchmod(file.descriptor, Self.completeFileMode)
        let synced = fsync(file.descriptor) == 0
        let sized = fstat(file.descriptor, &info) == 0
        guard Glibc.close(file.descriptor) == 0, synced, sized else {
            throw NearbyError(.endpointIoError, "cannot flush \(file.temporaryName)")
        }
        guard Int64(info.st_size) == expectedSize else {
            throw NearbyError(
                .endpointIoError, "received file has the wrong size (\(info.st_size), expected \(expectedSize) bytes)")
        }
        try checkInsideReceiveDirectory(file.folderDescriptor)
        // link() never replaces an existing file, unlike rename(), and never follows a symbolic link at the new name.
        for _ in 0..<100 {
            let name = try uniqueName(in: file.folderDescriptor, fileName: file.fileName)
            if linkat(file.folderDescriptor, file.temporaryName, file.folderDescriptor, name, 0) == 0 {
                let url = (file.folder + [name]).reduce(directory) { $0.appendingPathComponent($1) }
                return url
            }
            guard errno == EEXIST else {
                throw NearbyError(.endpointIoError, "cannot move the received file into place: \(Self.reason(errno))")
            }
        }
        throw NearbyError(.endpointIoError, "cannot find a free name for \(file.fileName)")
    }

    /// Closes and deletes payload `id`'s temporary file, if any.
    func discard(_ id: PayloadID) {
        guard let file = openFiles.withLock({ $0.removeValue(forKey: id) }) else { return }
        Glibc.close(file.descriptor)
        unlinkat(file.folderDescriptor, file.temporaryName, 0)
        Glibc.close(file.folderDescriptor)
    }

    /// Where payload `id`'s temporary file is: its folder (relative to the receive directory) and name.
    func temporaryLocation(_ id: PayloadID) -> (folder: [String], name: String)? {
        openFiles.withLock { $0[id].map { ($0.folder, $0.temporaryName) } }
    }

    /// Auto-resume after a restart: takes over the temporary file `temporaryName` in `folder` that another (dead)
    /// process of ours wrote, for payload `id`, renamed to a temporary name of this process; returns its size, where
    /// the payload goes on.
    func adopt(_ id: PayloadID, folder: [String], temporaryName kept: String, fileName: String, totalSize: Int64)
        throws(NearbyError) -> Int64
    {
        let folderDescriptor = try openFolder(folder)
        let temporary = temporaryName()
        guard renameat(folderDescriptor, kept, folderDescriptor, temporary) == 0 else {
            let reason = Self.reason(errno)
            Glibc.close(folderDescriptor)
            throw NearbyError(.endpointIoError, "cannot take over the partial file \(kept): \(reason)")
        }
        let descriptor = openat(folderDescriptor, temporary, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
        var info = stat()
        guard descriptor >= 0, fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            let reason = Self.reason(errno)
            if descriptor >= 0 { Glibc.close(descriptor) }
            unlinkat(folderDescriptor, temporary, 0)
            Glibc.close(folderDescriptor)
            throw NearbyError(.endpointIoError, "cannot open the partial file \(kept): \(reason)")
        }
        openFiles.withLock { open in
            open[id] = OpenFile(
                descriptor: descriptor, folderDescriptor: folderDescriptor, temporaryName: temporary, folder: folder,
                fileName: fileName, written: Int64(info.st_size), unknownSize: totalSize < 0)
        }
        return Int64(info.st_size)
    }

    /// Deletes every temporary file still open.
    func discardAll() {
        for id in openFiles.withLock({ Array($0.keys) }) {
            discard(id)
        }
    }

    // MARK: - Internals

    /// Opens (creating as needed) `folder` under the receive directory, one component at a time, never following a
    /// symbolic link; returns a descriptor of the innermost folder.
    private func openFolder(_ folder: [String]) throws(NearbyError) -> Int32 {
        var current = Glibc.open(directory.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard current >= 0 else {
            throw NearbyError(.endpointIoError, "cannot open the receive directory \(directory.path): \(Self.reason(errno))")
        }
        for component in folder {
            if mkdirat(current, component, 0o755) != 0 && errno != EEXIST {
                let reason = Self.reason(errno)
                Glibc.close(current)
                throw NearbyError(.endpointIoError, "cannot create the receive folder \(component): \(reason)")
            }
            let next = openat(current, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let failure = errno
            Glibc.close(current)
            guard next >= 0 else {
                throw NearbyError(
                    .endpointIoError, "cannot open the receive folder \(component) (a symbolic link?): \(Self.reason(failure))")
            }
            current = next
        }
        return current
    }

    /// Throws unless `needed` more bytes leave ``minimumFreeSpace`` free on the file system of `descriptor`.
    private func checkFreeSpace(_ descriptor: Int32, needed: Int64) throws(NearbyError) {
        guard minimumFreeSpace > 0 || needed > 0 else { return }
        guard let available = availableSpace(descriptor) else { return }  // unknown: write() reports a full disk
        guard available - needed >= minimumFreeSpace else {
            throw NearbyError(
                .endpointIoError,
                "not enough free space: \(available) bytes available, \(needed) needed, \(minimumFreeSpace) must stay free")
        }
    }

    /// Throws unless the folder of `descriptor`, resolved, is the receive directory (resolved) or inside it.
    private func checkInsideReceiveDirectory(_ descriptor: Int32) throws(NearbyError) {
        guard let root = Self.realPath(directory.path), let folder = Self.realPath("/proc/self/fd/\(descriptor)") else {
            throw NearbyError(.endpointIoError, "cannot resolve the receive folder")
        }
        // Compared as bytes: a folder named "\u{301}" makes "root/\u{301}" a String whose Characters do not start
        // with "root/".
        let prefix = Array((root == "/" ? "/" : root + "/").utf8)
        guard folder.utf8.elementsEqual(root.utf8) || folder.utf8.starts(with: prefix) else {
            throw NearbyError(.endpointIoError, "the receive folder \(folder) is outside the receive directory \(root)")
        }
    }

    /// `fileName`, or the first of `base (1).ext`, `base (2).ext`, … that does not exist in `folder`. A symbolic
    /// link at the wanted name fails the file (it was planted there).
    private func uniqueName(in folder: Int32, fileName: String) throws(NearbyError) -> String {
        let base = (fileName as NSString).deletingPathExtension
        let ext = (fileName as NSString).pathExtension
        var candidate = fileName
        var counter = 1
        var info = stat()
        while fstatat(folder, candidate, &info, AT_SYMLINK_NOFOLLOW) == 0 {
            if info.st_mode & S_IFMT == S_IFLNK {
                throw NearbyError(.endpointIoError, "a symbolic link is in the way of the received file \(candidate)")
            }
            let suffix = ext.isEmpty ? " (\(counter))" : " (\(counter)).\(ext)"
            let room = ReceivedFileNames.maxComponentBytes - suffix.utf8.count
            candidate = ReceivedFileNames.truncate(base, toUTF8Bytes: room) + suffix
            counter += 1
        }
        return candidate
    }

    private static func realPath(_ path: String) -> String? {
        guard let resolved = Glibc.realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }

    /// 0666 less the process's umask (`Umask:` of `/proc/self/status`; 022 when it cannot be read).
    static let completeFileMode: mode_t = {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
        let umask = line.flatMap { mode_t($0.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) }
        return 0o666 & ~(umask ?? 0o022)
    }()
}
