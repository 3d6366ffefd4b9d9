import CDBus
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// libdbus's main-loop hooks on one serial `DispatchQueue`: every watch becomes a `DispatchSource` on its file
/// descriptor, every timeout a `DispatchSourceTimer`, and pending input is dispatched on the same queue.
///
/// There is one dispatcher per connection and no thread per call: libdbus is only ever entered on `queue`, and
/// nothing blocks the cooperative pool. The connection core installs these hooks and owns this object.
final class DBusMainLoop: @unchecked Sendable {
    /// The queue every libdbus call of the connection runs on.
    let queue: DispatchQueue
    /// Called (on `queue`) after a watch or timeout was handled: dispatch what arrived.
    var dispatch: () -> Void = {}

    /// The dispatch sources of one watch; they exist only while libdbus has the watch enabled (a disabled watch's
    /// sources are cancelled rather than suspended, so no suspended source is ever released or re-armed). Each
    /// source watches a `dup` of the socket of its own: libdbus has a read and a write watch on one socket, and
    /// libdispatch sources sharing one descriptor lost the read interest when the write source was toggled
    /// (replies then never arrived).
    private final class WatchSources {
        let watch: OpaquePointer
        let fd: Int32
        let flags: UInt32
        var read: (any DispatchSourceRead)?
        var write: (any DispatchSourceWrite)?
        /// Bumped whenever sources are created, so a handler of cancelled sources does nothing.
        var generation = 0
        init(watch: OpaquePointer, fd: Int32, flags: UInt32) {
            self.watch = watch
            self.fd = fd
            self.flags = flags
        }
    }

    // Only touched on `queue`.
    private var watches: [OpaquePointer: WatchSources] = [:]
    private var timers: [OpaquePointer: any DispatchSourceTimer] = [:]

    init(label: String) {
        queue = DispatchQueue(label: label)
    }

    /// Installs the hooks on `connection`; call on `queue`.
    func install(on connection: OpaquePointer) {
        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(
            connection,
            { watch, data in
                guard let watch, let data else { return 0 }
                Unmanaged<DBusMainLoop>.fromOpaque(data).takeUnretainedValue().addWatch(watch)
                return 1
            },
            { watch, data in
                guard let watch, let data else { return }
                Unmanaged<DBusMainLoop>.fromOpaque(data).takeUnretainedValue().removeWatch(watch)
            },
            { watch, data in
                guard let watch, let data else { return }
                Unmanaged<DBusMainLoop>.fromOpaque(data).takeUnretainedValue().updateWatch(watch)
            }, me, nil)
        dbus_connection_set_timeout_functions(
            connection,
            { timeout, data in
                guard let timeout, let data else { return 0 }
                Unmanaged<DBusMainLoop>.fromOpaque(data).takeUnretainedValue().updateTimeout(timeout)
                return 1
            },
            { timeout, data in
                guard let timeout, let data else { return }
                Unmanaged<DBusMainLoop>.fromOpaque(data).takeUnretainedValue().removeTimeout(timeout)
            },
            { timeout, data in
                guard let timeout, let data else { return }
                Unmanaged<DBusMainLoop>.fromOpaque(data).takeUnretainedValue().updateTimeout(timeout)
            }, me, nil)
        dbus_connection_set_dispatch_status_function(
            connection,
            { _, status, data in
                guard let data, status == DBUS_DISPATCH_DATA_REMAINS else { return }
                Unmanaged<DBusMainLoop>.fromOpaque(data).takeUnretainedValue().scheduleDispatch()
            }, me, nil)
        dbus_connection_set_wakeup_main_function(
            connection,
            { data in
                guard let data else { return }
                Unmanaged<DBusMainLoop>.fromOpaque(data).takeUnretainedValue().scheduleDispatch()
            }, me, nil)
    }

    /// Runs `dispatch` soon, on `queue` (never re-entrantly from inside libdbus).
    func scheduleDispatch() {
        queue.async { self.dispatch() }
    }

    /// Cancels every source (after the connection is gone).
    func tearDown() {
        for watch in Array(watches.keys) { removeWatch(watch) }
        for timeout in Array(timers.keys) { removeTimeout(timeout) }
    }

    // MARK: Watches

    private func addWatch(_ watch: OpaquePointer) {
        watches[watch] = WatchSources(watch: watch, fd: dbus_watch_get_unix_fd(watch), flags: dbus_watch_get_flags(watch))
        updateWatch(watch)
    }

    private func updateWatch(_ watch: OpaquePointer) {
        guard let sources = watches[watch] else { return }
        let enabled = dbus_watch_get_enabled(watch) != 0
        if enabled, sources.read == nil, sources.write == nil {
            sources.generation += 1
            let generation = sources.generation
            if sources.flags & DBUS_WATCH_READABLE.rawValue != 0 {
                let fd = dup(sources.fd)
                let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
                source.setCancelHandler { close(fd) }
                source.setEventHandler { [weak self] in
                    guard let self, let current = self.watches[watch], current.generation == generation,
                        current.read != nil
                    else { return }
                    self.handle(watch, DBUS_WATCH_READABLE.rawValue)
                }
                sources.read = source
                source.resume()
            }
            if sources.flags & DBUS_WATCH_WRITABLE.rawValue != 0 {
                let fd = dup(sources.fd)
                let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
                source.setCancelHandler { close(fd) }
                source.setEventHandler { [weak self] in
                    guard let self, let current = self.watches[watch], current.generation == generation,
                        current.write != nil
                    else { return }
                    self.handle(watch, DBUS_WATCH_WRITABLE.rawValue)
                }
                sources.write = source
                source.resume()
            }
        } else if !enabled {
            cancelSources(sources)
        }
    }

    private func cancelSources(_ sources: WatchSources) {
        sources.read?.cancel()
        sources.write?.cancel()
        sources.read = nil
        sources.write = nil
    }

    private func removeWatch(_ watch: OpaquePointer) {
        guard let sources = watches.removeValue(forKey: watch) else { return }
        cancelSources(sources)
    }

    private func handle(_ watch: OpaquePointer, _ flags: UInt32) {
        dbus_watch_handle(watch, flags)
        dispatch()
    }

    // MARK: Timeouts

    private func updateTimeout(_ timeout: OpaquePointer) {
        removeTimeout(timeout)
        guard dbus_timeout_get_enabled(timeout) != 0 else { return }
        let interval = DispatchTimeInterval.milliseconds(Int(max(1, dbus_timeout_get_interval(timeout))))
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler { [weak self] in
            guard let self, self.timers[timeout] != nil else { return }
            dbus_timeout_handle(timeout)
            self.dispatch()
        }
        timers[timeout] = timer
        timer.resume()
    }

    private func removeTimeout(_ timeout: OpaquePointer) {
        timers.removeValue(forKey: timeout)?.cancel()
    }
}
