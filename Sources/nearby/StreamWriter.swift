import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `--stream-to -|FILE`: where a received stream's bytes go.
enum StreamTarget: Sendable, Equatable {
    /// Standard output (events then go to standard error).
    case standardOutput
    /// A file, written under a temporary name beside it and renamed when the stream is complete.
    case file(String)

    init(argument: String) {
        self = argument == "-" ? .standardOutput : .file(argument)
    }
}

/// Writes one received stream to its ``StreamTarget``. A file is written as `.NAME.nearby-partial` beside its final
/// name and renamed into place only when the stream ended whole, so a broken stream never looks complete; it
/// replaces a file already there (as `> FILE` would). Standard output gets the bytes as they come.
final class StreamWriter {
    /// Writing failed (the reason names the path): the stream is cancelled.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let descriptor: Int32
    private let temporaryPath: String?
    private let finalPath: String?
    private var done = false

    init(target: StreamTarget) throws {
        switch target {
        case .standardOutput:
            descriptor = STDOUT_FILENO
            temporaryPath = nil
            finalPath = nil
        case .file(let path):
            let url = URL(fileURLWithPath: path)
            let temporary = url.deletingLastPathComponent()
                .appendingPathComponent(".\(url.lastPathComponent).nearby-partial").path
            let opened = open(temporary, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0o666)
            guard opened >= 0 else {
                throw Failure(description: "cannot write the stream to \(path): \(ErrorText.reason(errno: errno))")
            }
            descriptor = opened
            temporaryPath = temporary
            finalPath = url.path
        }
    }

    /// Appends bytes.
    func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(description: "cannot write the stream to \(finalPath ?? "standard output"): \(ErrorText.reason(errno: errno))")
            }
            offset += written
        }
    }

    /// The stream ended whole: a file is closed and moved into place; returns its path.
    func finish() throws -> String? {
        done = true
        guard let temporaryPath, let finalPath else { return nil }
        let synced = fsync(descriptor) == 0
        let closed = close(descriptor) == 0
        guard synced, closed else {
            unlink(temporaryPath)
            throw Failure(description: "cannot write the stream to \(finalPath): \(ErrorText.reason(errno: errno))")
        }
        guard rename(temporaryPath, finalPath) == 0 else {
            let reason = ErrorText.reason(errno: errno)
            unlink(temporaryPath)
            throw Failure(description: "cannot move the stream into place at \(finalPath): \(reason)")
        }
        return finalPath
    }

    /// The stream broke: a partial file is deleted.
    func abort() {
        guard !done else { return }
        done = true
        guard let temporaryPath else { return }
        close(descriptor)
        unlink(temporaryPath)
    }
}
