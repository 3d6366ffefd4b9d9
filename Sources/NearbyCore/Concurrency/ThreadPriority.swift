#if canImport(Glibc)
import Glibc
#endif

/// The scheduling priority of the calling thread.
package enum ThreadPriority {
    /// Gives the calling thread the lowest CPU priority (nice 19). On Linux a nice value belongs to one thread, so
    /// the rest of the process keeps its priority; background housekeeping then runs only on time nothing else
    /// wants. A failure is ignored.
    package static func lowerCurrentToBackground() {
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
    }
}
