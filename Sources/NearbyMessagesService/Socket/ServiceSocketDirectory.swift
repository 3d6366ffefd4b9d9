import Foundation
import NearbyWire

#if canImport(Glibc)
import Glibc
#endif

/// Checks (and makes) the directory of the service's socket so that no other local user can replace the socket or
/// put one of theirs in its place.
///
/// `/tmp/nearby-UID` is a name anyone can take first: another user who made it (mode 0777) could swap the socket
/// and read what clients send. So the directory must be a real directory (not a symbolic link) owned by this user
/// and writable by nobody else, and every directory above it (after symbolic links are resolved) must be owned by
/// this user or root and writable by nobody else unless it is sticky (as `/tmp` is, so that nobody can rename
/// another user's entry). A missing directory is made with mode 0700.
enum ServiceSocketDirectory {
    /// Makes `directory` if it is missing, then checks it and its ancestors.
    /// - Throws: `NearbyError` `.invalidArgument` naming the directory and what is wrong with it.
    static func prepare(_ directory: URL) throws(NearbyError) {
        let path = directory.path
        var status = stat()
        if lstat(path, &status) != 0 {
            guard errno == ENOENT else { throw failure(path, "cannot be examined (errno \(errno))") }
            let parent = directory.deletingLastPathComponent()
            do {
                try FileManager.default.createDirectory(
                    at: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw failure(parent.path, "cannot be made: \(error.localizedDescription)")
            }
            // EEXIST: someone made it meanwhile; the checks below decide whether it will do.
            if mkdir(path, 0o700) != 0, errno != EEXIST { throw failure(path, "cannot be made (errno \(errno))") }
        }
        try check(path)
    }

    /// Checks that `path` is a directory only this user can change, in a chain of directories only this user
    /// (or root) can change.
    static func check(_ path: String) throws(NearbyError) {
        let me = geteuid()
        var status = stat()
        guard lstat(path, &status) == 0 else { throw failure(path, "cannot be examined (errno \(errno))") }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw failure(path, status.st_mode & S_IFMT == S_IFLNK ? "is a symbolic link" : "is not a directory")
        }
        guard status.st_uid == me else {
            throw failure(path, "belongs to uid \(status.st_uid), not to this user (uid \(me)): another user made it")
        }
        guard status.st_mode & 0o022 == 0 else {
            throw failure(path, "is writable by other users (mode \(String(status.st_mode & 0o7777, radix: 8)))")
        }
        guard let resolved = realpath(path, nil) else { throw failure(path, "cannot be resolved (errno \(errno))") }
        defer { free(resolved) }
        var ancestor = URL(fileURLWithPath: String(cString: resolved)).deletingLastPathComponent()
        while true {
            var above = stat()
            guard stat(ancestor.path, &above) == 0 else { throw failure(ancestor.path, "cannot be examined (errno \(errno))") }
            guard above.st_uid == me || above.st_uid == 0 else {
                throw failure(path, "lies in \(ancestor.path), which belongs to uid \(above.st_uid)")
            }
            if above.st_mode & 0o022 != 0, above.st_mode & S_ISVTX == 0 {
                throw failure(path, "lies in \(ancestor.path), which other users may change")
            }
            if ancestor.path == "/" { break }
            ancestor = ancestor.deletingLastPathComponent()
        }
    }

    private static func failure(_ path: String, _ what: String) -> NearbyError {
        NearbyError(
            .invalidArgument,
            "the socket directory \(path) \(what); refusing to listen there (remove it, or choose another --socket)")
    }
}
