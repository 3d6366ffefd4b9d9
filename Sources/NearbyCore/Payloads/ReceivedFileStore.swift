#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NearbyWire

/// Writes incoming files under a receive directory: each into a hidden temporary file, moved to its final,
/// sanitized name only when complete and of the announced size. A failed or cancelled file is deleted, so a
/// partial file never appears under a final name. Names that already exist get a ` (1)`, ` (2)`, … suffix.
final class ReceivedFileStore: @unchecked Sendable {
    private struct OpenFile {
        var descriptor: Int32
        var temporaryPath: String
        var directory: String
        var fileName: String
        var written: Int64
    }

    /// Where files go.
    let directory: URL
    private var open: [PayloadID: OpenFile] = [:]
    private let lock = NSLock()

    init(directory: URL) {
        self.directory = directory
    }

    /// Creates the temporary file of payload `id`.
    func begin(_ id: PayloadID, fileName: String, parentFolder: String) throws(NearbyError) {
        let folder = ReceivedFileNames.sanitizeParentFolder(parentFolder)
        let target = folder.reduce(directory) { $0.appendingPathComponent($1, isDirectory: true) }
        do {
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        } catch {
            throw NearbyError(.endpointIoError, "cannot create receive folder \(target.path)", cause: error)
        }
        let temporary = target.appendingPathComponent(".nearby-\(UInt64(bitPattern: id)).partial").path
        let descriptor = Glibc.open(temporary, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw NearbyError(.endpointIoError, "cannot create \(temporary): \(String(cString: strerror(errno)))")
        }
        lock.withLock {
            open[id] = OpenFile(
                descriptor: descriptor, temporaryPath: temporary, directory: target.path,
                fileName: ReceivedFileNames.sanitizeFileName(fileName), written: 0)
        }
    }

    /// Appends bytes to payload `id`'s temporary file.
    func write(_ id: PayloadID, _ data: Data) throws(NearbyError) {
        guard let file = lock.withLock({ open[id] }) else {
            throw NearbyError(.endpointIoError, "no open file for payload \(id)")
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
            throw NearbyError(.endpointIoError, "writing \(file.temporaryPath): \(String(cString: strerror(failure)))")
        }
        lock.withLock { open[id]?.written += Int64(data.count) }
    }

    /// Closes payload `id`'s file, checks its size, and moves it to its final name; returns that path.
    func finish(_ id: PayloadID, expectedSize: Int64) throws(NearbyError) -> URL {
        guard let file = lock.withLock({ open.removeValue(forKey: id) }) else {
            throw NearbyError(.endpointIoError, "no open file for payload \(id)")
        }
        guard fsync(file.descriptor) == 0, Glibc.close(file.descriptor) == 0 else {
            unlink(file.temporaryPath)
            throw NearbyError(.endpointIoError, "cannot flush \(file.temporaryPath)")
        }
        var info = stat()
        guard stat(file.temporaryPath, &info) == 0, Int64(info.st_size) == expectedSize else {
            unlink(file.temporaryPath)
            throw NearbyError(.endpointIoError, "received file has the wrong size (expected \(expectedSize) bytes)")
        }
        let final = uniquePath(directory: file.directory, fileName: file.fileName)
        // link() + unlink() never replaces an existing file, unlike rename().
        guard link(file.temporaryPath, final) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(file.temporaryPath)
            throw NearbyError(.endpointIoError, "cannot move the received file into place: \(reason)")
        }
        unlink(file.temporaryPath)
        return URL(fileURLWithPath: final)
    }

    /// Closes and deletes payload `id`'s temporary file, if any.
    func discard(_ id: PayloadID) {
        guard let file = lock.withLock({ open.removeValue(forKey: id) }) else { return }
        Glibc.close(file.descriptor)
        unlink(file.temporaryPath)
    }

    /// Deletes every temporary file still open.
    func discardAll() {
        for id in lock.withLock({ Array(open.keys) }) {
            discard(id)
        }
    }

    private func uniquePath(directory: String, fileName: String) -> String {
        let base = (fileName as NSString).deletingPathExtension
        let ext = (fileName as NSString).pathExtension
        var candidate = directory + "/" + fileName
        var counter = 1
        while access(candidate, F_OK) == 0 {
            let suffixed = ext.isEmpty ? "\(base) (\(counter))" : "\(base) (\(counter)).\(ext)"
            candidate = directory + "/" + suffixed
            counter += 1
        }
        return candidate
    }
}
