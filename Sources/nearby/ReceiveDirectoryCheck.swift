import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The receive directory is checked when a command starts, not when the first file arrives: it is made if
/// missing, must be a directory this user can write (a file is created and deleted there, which also catches a
/// read-only mount), and must have more free space than the floor received files must leave.
enum ReceiveDirectoryCheck {
    /// Makes and checks `directory`.
    /// - Throws: `CLIFailure` naming the directory and the cause.
    static func prepare(_ directory: URL, minimumFreeSpace: Int64) throws {
        let path = directory.path
        var info = stat()
        if stat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFDIR else {
                throw CLIFailure("the receive directory \(path) is not a directory")
            }
        } else {
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw CLIFailure("cannot create the receive directory \(ErrorText.describe(error, path: path))")
            }
        }
        let probe = directory.appendingPathComponent(".nearby-write-check-\(getpid())").path
        let descriptor = open(probe, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw CLIFailure("cannot write to the receive directory \(path): \(ErrorText.reason(errno: errno))")
        }
        var space = statvfs()
        let measured = fstatvfs(descriptor, &space) == 0
        close(descriptor)
        unlink(probe)
        if measured {
            let available = Int64(space.f_bavail) * Int64(space.f_frsize)
            guard available > minimumFreeSpace else {
                throw CLIFailure(
                    "the receive directory \(path) has \(Quantities.size(available)) free, not more than the "
                        + "\(Quantities.size(minimumFreeSpace)) that must stay free (--min-free-space)")
            }
        }
    }
}
