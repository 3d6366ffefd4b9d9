import Dispatch
import Foundation
import Logging
import NearbyCore
import NearbyWire

#if canImport(Glibc)
import Glibc
#endif

/// Watches a `ConsentStore`'s file with inotify, so that consent granted or revoked by **another process** (the
/// `nearby` CLI, a settings app, another app of the same user) is noticed at once, without polling.
///
/// The directory is watched (the store replaces the file by a rename); each event naming the file reads the state
/// again, and `onChange` hears it when it differs from the last state seen. Events are read on a dispatch source.
public final class ConsentFileWatch: Sendable {
    /// Dispatch sources are thread-safe (cancelling from any thread is allowed).
    private nonisolated(unsafe) let source: any DispatchSourceRead

    /// Starts watching `store`'s file (creating its directory when missing); `onChange` gets the new state each time
    /// it changes, on a private queue.
    /// - Throws: `NearbyError` `.unknown` when inotify cannot watch the directory.
    public init(store: ConsentStore, onChange: @escaping @Sendable (Bool) -> Void) throws {
        try? FileManager.default.createDirectory(at: store.directory, withIntermediateDirectories: true)
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { throw NearbyError(.unknown, "inotify_init1: \(String(cString: strerror(errno)))") }
        let mask = UInt32(IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE | IN_MOVED_FROM)
        guard inotify_add_watch(fd, store.directory.path, mask) >= 0 else {
            let text = String(cString: strerror(errno))
            close(fd)
            throw NearbyError(.unknown, "inotify cannot watch \(store.directory.path): \(text)")
        }
        let name = store.fileURL.lastPathComponent
        let last = LockedValue(store.isGranted)
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "swift-nearby.consent-watch"))
        source.setEventHandler {
            guard Self.drain(fd).contains(name) else { return }
            let granted = store.isGranted
            let changed = last.withLock { last in
                defer { last = granted }
                return last != granted
            }
            if changed { onChange(granted) }
        }
        source.setCancelHandler { close(fd) }
        self.source = source
        source.resume()
    }

    /// Stops watching.
    public func cancel() {
        if !source.isCancelled { source.cancel() }
    }

    deinit { cancel() }

    /// Reads every pending inotify event; returns the file names they name.
    private static func drain(_ fd: Int32) -> Set<String> {
        var names: Set<String> = []
        let size = 4096
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: MemoryLayout<inotify_event>.alignment)
        defer { buffer.deallocate() }
        while true {
            let count = read(fd, buffer, size)
            guard count > 0 else { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameLength = Int(event.len)
                if nameLength > 0 {
                    let start = buffer.advanced(by: offset + MemoryLayout<inotify_event>.size).assumingMemoryBound(to: CChar.self)
                    names.insert(String(cString: start))
                }
                offset += MemoryLayout<inotify_event>.size + nameLength
            }
        }
        return names
    }
}
