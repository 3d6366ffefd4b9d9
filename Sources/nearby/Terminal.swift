import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What the tool knows about the terminal it prints to.
enum Terminal {
    /// Whether `descriptor` is a terminal.
    static func isTerminal(_ descriptor: Int32) -> Bool {
        isatty(descriptor) == 1
    }

    /// The width of the terminal on `descriptor`: `$COLUMNS` when set to a number (as most tools honour it), else
    /// the kernel's window size (`TIOCGWINSZ`, asked each time, so a resized window is followed), else 80.
    static func columns(of descriptor: Int32) -> Int {
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let columns = Int(text), columns > 0 {
            return columns
        }
        var size = winsize()
        if ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 {
            return Int(size.ws_col)
        }
        return 80
    }

    /// Writes all of `text` to `descriptor`, retrying short writes and interruptions. A closed pipe or another
    /// error drops the rest (SIGPIPE is ignored by `nearby`: a reader that went away must not kill a transfer).
    static func write(_ text: String, to descriptor: Int32) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer in
                Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
