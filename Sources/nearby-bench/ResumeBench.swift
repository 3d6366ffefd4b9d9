import Foundation
import NearbyConnections

/// `resume_overhead`: a file sent through a relay that resets the connection once at 40 %, against the same file
/// through the same relay uncut (the ratio of the times), and `resume_bytes_resent`: the bytes the relay forwarded
/// beyond the uncut run's, which is what was in flight at the cut and sent again (goal: a few chunks).
struct ResumeBench {
    let sizes: Sizes
    let report: Report

    /// The file: 256 MiB, or the run's file size when smaller (`--quick`).
    var fileBytes: Int { min(256 << 20, sizes.fileBytes) }

    func run() async {
        do {
            let peer = try ReceiverProcess()
            defer { peer.stop() }
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("nearby-bench-resume-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let source = directory.appendingPathComponent("resume.bin")
            try Benchmarks(sizes: sizes, report: report).makeFile(at: source, size: fileBytes)

            let uncut = try await transfer(source, to: peer.nearbyPort, cutAt: nil)
            let cut = try await transfer(source, to: peer.nearbyPort, cutAt: fileBytes * 4 / 10)
            guard cut.cuts == 1 else { throw BenchFailure("the relay cut \(cut.cuts) times, not once") }
            let note = [("file_bytes", "\(fileBytes)"), ("cut_at", "40%")]
            report.emit(Figure(
                metric: "resume_overhead", value: cut.seconds, unit: "s", baseline: "uncut", baselineValue: uncut.seconds,
                lowerIsBetter: true, note: note))
            let resent = Double(max(0, cut.forwarded - uncut.forwarded))
            report.emit(Figure(
                metric: "resume_bytes_resent", value: resent, unit: "bytes", baseline: "file_bytes",
                baselineValue: Double(fileBytes), lowerIsBetter: true,
                note: note + [("chunks_of_64KiB", String(format: "%.1f", resent / 65536))]))
        } catch {
            warn("resume: \(error)")
            report.emit(Figure(metric: "resume_overhead", value: nil, unit: "s", lowerIsBetter: true, note: [("error", "\(error)")]))
            report.emit(Figure(metric: "resume_bytes_resent", value: nil, unit: "bytes", lowerIsBetter: true, note: [("error", "\(error)")]))
        }
    }

    /// Sends `source` through a relay (cut once at `cutAt` forwarded bytes, if given) and waits for the receiver's
    /// ack; returns the seconds from the send to the ack, the bytes the relay forwarded, and its cuts.
    private func transfer(_ source: URL, to port: Int, cutAt: Int?) async throws -> (seconds: Double, forwarded: Int, cuts: Int) {
        let relay = try BenchRelay(target: port, cutAt: cutAt)
        defer { relay.stop() }
        let (manager, tracker, endpoint) = try await Benchmarks.connect(to: relay.port)
        let acks = await tracker.state.acks
        let start = now()
        _ = try await bounded(60, "sendResource") { try await manager.sendResource(at: source, withName: "resume.bin", to: endpoint) }
        guard await tracker.wait(timeout: 600, { $0.acks > acks }) else { throw BenchFailure("the file did not arrive") }
        let seconds = now() - start
        await closeQuietly(manager, tracker, endpoint: endpoint)
        return (seconds, relay.forwarded, relay.cuts)
    }
}

/// A TCP relay on 127.0.0.1 for the resume figures: bridges each accepted connection to `target`, counts the
/// bytes forwarded towards it, and resets (RST) the connection under way once when the count reaches `cutAt`.
final class BenchRelay: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let target: Int
    private let lock = NSLock()
    private var cutAt: Int?
    private var forwardedBytes = 0
    private var cutCount = 0
    private var sockets: [Int32] = []

    init(target: Int, cutAt: Int?) throws {
        self.target = target
        self.cutAt = cutAt
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw BenchFailure("relay socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        guard bound == 0, listen(listener, 16) == 0 else {
            close(listener)
            throw BenchFailure("relay bind/listen: errno \(errno)")
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in acceptLoop() }.start()
    }

    var forwarded: Int { lock.withLock { forwardedBytes } }
    var cuts: Int { lock.withLock { cutCount } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for socket in lock.withLock({ sockets }) { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// One bridged connection: its two sockets, closed by the pump that stops last.
    private final class Bridge: @unchecked Sendable {
        let client: Int32
        let upstream: Int32
        let lock = NSLock()
        var running = 2
        var reset = false
        init(client: Int32, upstream: Int32) {
            self.client = client
            self.upstream = upstream
        }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(target).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(client)
                close(upstream)
                continue
            }
            lock.withLock { sockets += [client, upstream] }
            let bridge = Bridge(client: client, upstream: upstream)
            Thread { [self] in pump(bridge, forward: true) }.start()
            Thread { [self] in pump(bridge, forward: false) }.start()
        }
    }

    private func pump(_ bridge: Bridge, forward: Bool) {
        let (source, destination) = forward ? (bridge.client, bridge.upstream) : (bridge.upstream, bridge.client)
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        loop: while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var length = count
            var cutNow = false
            if forward {
                lock.withLock {
                    if let limit = cutAt, forwardedBytes + count >= limit {
                        length = max(0, limit - forwardedBytes)
                        cutAt = nil
                        cutCount += 1
                        cutNow = true
                    }
                    forwardedBytes += length
                }
            }
            var offset = 0
            while offset < length {
                let written = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + offset, length - offset) }
                guard written > 0 else { break loop }
                offset += written
            }
            if cutNow {
                // RST both sides: linger 0, and reads shut down so that the other pump lets go at once.
                var linger = linger(l_onoff: 1, l_linger: 0)
                bridge.lock.withLock { bridge.reset = true }
                for socket in [source, destination] {
                    setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
                    shutdown(socket, Int32(SHUT_RD))
                }
                break
            }
        }
        let (last, reset) = bridge.lock.withLock { () -> (Bool, Bool) in
            bridge.running -= 1
            return (bridge.running == 0, bridge.reset)
        }
        // An orderly end on one side ends the other side's writes too (half-close), as a real path would.
        if !reset, !last { shutdown(destination, Int32(SHUT_WR)) }
        if last {
            lock.withLock { sockets.removeAll { $0 == bridge.client || $0 == bridge.upstream } }
            close(bridge.client)
            close(bridge.upstream)
        }
    }
}
