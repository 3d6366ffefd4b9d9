#if canImport(Glibc)
import Glibc
#endif

/// The kernel's name of the calling thread (Linux's `/proc/thread-self/comm`).
///
/// Foundation's `Thread.name` is not used for this: on Linux its setter does nothing until the creating thread has
/// recorded the new thread's handle, so a name set first thing in a new thread is sometimes lost, and the getter
/// then reports the name the thread inherited from its creator (a cooperative-pool thread's
/// `com.apple.root.default-qos`, cut to 15 characters). Glibc's `pthread_setname_np` is not visible to Swift.
package enum ThreadName {
    private static let path = "/proc/thread-self/comm"

    /// The calling thread's name (empty if it cannot be read).
    package static var current: String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return "" }
        var name = buffer.prefix(count)
        if name.last == UInt8(ascii: "\n") { name = name.dropLast() }
        return String(decoding: name, as: UTF8.self)
    }

    /// Names the calling thread. Linux keeps the first 15 bytes; give an ASCII name. A failure is ignored (the name
    /// is for debuggers and tests).
    package static func setCurrent(_ name: String) {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}
